"""Stored rows turned back into load records: importer/rows.py read backwards.

Every field the loader takes is written, nulls and defaults included, so that what
is loaded is exactly what was stored. Secrets are written in their stored form
(hashes, encrypted values), never in clear.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from cloudadmin.billing.addendums import fields, shaping
from cloudadmin.billing.addendums.fields import AddendumField
from cloudadmin.kit.timeparse import isoformat_z

Row = Mapping[Any, Any]  # a RowMapping of the table
Record = dict[str, Any]


def _instant(value: datetime | None) -> str | None:
    return isoformat_z(value) if value is not None else None


def _value(value: Any) -> Any:
    # The stored instants (UTC) as the load format spells them; the rest as stored.
    return _instant(value) if isinstance(value, datetime) else value


def copied(*fields: str | tuple[str, str]) -> Callable[[Row], Record]:
    """A record that copies columns of its row, in the order given: a column under its
    own name, or ``(name, column)`` under the record's name for it."""
    pairs = [(f, f) if isinstance(f, str) else f for f in fields]

    def record(row: Row) -> Record:
        return {name: _value(row[column]) for name, column in pairs}

    return record


client_record = copied(
    "id", "email", ("companyName", "company_name"), "name", "status", "capabilities",
    ("serviceStatuses", "service_statuses"), ("paidFeatures", "paid_features"),
    ("freeFeatures", "free_features"), "service_availability",
    ("entryBaseDomain", "entry_base_domain"), "deleted", "bill_type", "is_test", "phone",
    "website", "signup_process", "custom_id", "country_code", ("seller", "seller_id"),
    ("resellers", "reseller_id"), "client_type", "owner", "created_at",
)  # fmt: skip

# A user's record names its groups (a table of their own) after its account.
_user_account = copied("id", "email", ("client", "client_id"))
_user_details = copied(
    "name", "lang", "phone", "company", "deleted", "activated", "sso_auth", "two_fa",
    "auth_types", "user_type", "is_active", "superuser", "password_hash", "date_joined",
)  # fmt: skip


def user_record(row: Row, groups: list[int]) -> Record:
    return {**_user_account(row), "groups": groups, **_user_details(row)}


api_key_record = copied(
    "id", ("user", "user_id"), ("key_hash", "secret_hash"), "name", "description",
    ("role", "role_id"), "expires_at", "revoked", "created_at", "last_usage",
)  # fmt: skip

seller_record = copied(
    "id", "email", "full_name", ("reseller", "reseller_id"), "phone", "company",
    "date_joined", "activated", "deleted",
)  # fmt: skip


def branding_record(row: Row) -> Record:
    # Uploaded logo and favicon files are not part of the document (docs/import.md).
    mail = row["mail_server"] or {}
    return {
        "reseller": row["reseller_id"],
        "domain": row["domain"],
        "publicSettings": row["public_settings"] or {},
        "privateSettings": {"mailServer": mail} if mail else {},
        "mail_password_encrypted": row["mail_password_encrypted"],
        "deleted": row["deleted"],
    }


notification_setting_record = copied(
    "id", ("reseller", "reseller_id"), "notification_type", "email", "enabled"
)
project_record = copied("id", ("client", "client_id"), "name")
region_record = copied("id", "name")
listener_record = copied(
    "id", "project_id", "region_id", "name", "allowed_cidrs", "connection_limit",
    "creator_task_id", "insert_headers", "load_balancer_id", "operating_status", "pool_count",
    "protocol", "protocol_port", "provisioning_status", "secret_id", "sni_secret_id", "stats",
    "task_id", "timeout_client_data", "timeout_member_connect", "timeout_member_data",
    "user_list",
)  # fmt: skip
lifecycle_policy_record = copied(
    "id", "project_id", "region_id", "name", "action", "status", "user_id", "schedules",
    "volumes",
)  # fmt: skip


def _addendum_value(field: AddendumField) -> str:
    read = f"row[{field.column!r}]"
    return f"_instant({read})" if field.kind.endswith("instant") else read


# The stored fields of the field table (billing/addendums/fields.py), nested as the
# wire nests them: written once as the dict literal (shaping.py), the export's rows
# are many.
addendum_record: Callable[[Row], Record] = shaping.build(
    "addendum_record",
    shaping.dict_literal(fields.layout(fields.STORED_FIELDS), _addendum_value),
    names={"_instant": _instant},
)


amqp_subscription_record = copied(
    "id", ("client", "client_id"), "connection_string_encrypted", "exchange", "routing_key",
    "receive_child_client_events",
)  # fmt: skip

# Amounts are stored as decimal text; written as JSON strings they stay exact (the loader
# reads a string amount as the decimal it spells).
price_record = copied(
    "region_id", "currency_code", "flavors", "volume_types", "public_ipv4_per_hour",
    "tax_percent", "discount_percent",
)  # fmt: skip
