"""Validated records turned into table rows (wire names -> column names).

A row leaves out a column the document did not give when the column must keep
its stored value on a second load: creation instants (a default of "now" would
change on every load) and secrets the document does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from cloudadmin.billing.addendums.fields import STORED_COLUMNS, STORED_FIELDS
from cloudadmin.billing.addendums.names import derive_row
from cloudadmin.cloud.pricing import records as prices
from cloudadmin.cloud.pricing.records import PriceRecord
from cloudadmin.importer import cloud_records as cr
from cloudadmin.importer import records as r
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.crypto import SecretBox, hash_password

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AccountInfo:
    """What other records need to know about a client account."""

    client_type: str
    company_name: str


@dataclass
class RowContext:
    secret_box: SecretBox
    # client id -> facts, from the document or the database (filled by the checks)
    accounts: dict[int, AccountInfo]


def _optional(row: Row, column: str, value: Any) -> Row:
    if value is not None:
        row[column] = value
    return row


def _fields(rec: Any, *same: str, **renamed: str) -> Row:
    """The record's fields ``same`` under their own names, and ``column="field"`` for
    the ones whose column is named otherwise: the row of the plain copies. Each of
    ``same`` may name several fields, separated by spaces (as namedtuple's names)."""
    row = {name: getattr(rec, name) for names in same for name in names.split()}
    row.update({column: getattr(rec, name) for column, name in renamed.items()})
    return row


def _company(ctx: RowContext, given: str | None, account: int) -> str:
    """A user's or seller's company: the document's, else its account's name."""
    return given if given is not None else ctx.accounts[account].company_name


def client_row(rec: r.ClientRecord, _ctx: RowContext) -> Row:
    row = _fields(
        rec,
        "id email name status deleted bill_type is_test phone website signup_process",
        "custom_id client_type owner",
        company_name="companyName",
        entry_base_domain="entryBaseDomain",
        seller_id="seller",
        reseller_id="resellers",
    )
    row.update(
        company_name_folded=fold(rec.companyName),  # as the model sets it for the API
        capabilities=list(rec.capabilities),
        service_statuses={k: v.model_dump() for k, v in rec.serviceStatuses.items()},
        paid_features=_features(rec.paidFeatures),
        free_features=_features(rec.freeFeatures),
        country_code=rec.country_code.upper() if rec.country_code else None,
    )
    _optional(row, "service_availability", rec.service_availability)
    return _optional(row, "created_at", rec.created_at)


def _features(value: Mapping[Any, list[r.Feature]]) -> dict[str, list[dict[str, Any]]]:
    return {service: [f.model_dump() for f in items] for service, items in value.items()}


def user_row(rec: r.UserRecord, ctx: RowContext) -> Row:
    row = _fields(
        rec,
        "id email name lang phone deleted activated sso_auth two_fa user_type is_active superuser",
        client_id="client",
    )
    row["company"] = _company(ctx, rec.company, rec.client)
    row["auth_types"] = list(rec.auth_types)
    _optional(row, "date_joined", rec.date_joined)
    if rec.password is not None:
        row["password_hash"] = hash_password(rec.password)
    return _optional(row, "password_hash", rec.password_hash)


def api_key_row(rec: r.ApiKeyRecord, _ctx: RowContext) -> Row:
    row = _fields(rec, "id", "name", "expires_at", "revoked", user_id="user")
    row["secret_hash"] = rec.stored_hash()
    # Older documents do not carry these; a load of one keeps what the API stored.
    _optional(row, "description", rec.description)
    _optional(row, "role_id", rec.role)
    _optional(row, "last_usage", rec.last_usage)
    return _optional(row, "created_at", rec.created_at)


def seller_row(rec: r.SellerRecord, ctx: RowContext) -> Row:
    row = _fields(
        rec, "id", "email", "full_name", "phone", "activated", "deleted", reseller_id="reseller"
    )
    row["company"] = _company(ctx, rec.company, rec.reseller)
    return _optional(row, "date_joined", rec.date_joined)


def branding_row(rec: r.BrandingRecord, ctx: RowContext) -> Row:
    mail = rec.privateSettings.mailServer
    mail_server = mail.model_dump(exclude_unset=True, exclude={"password"}) if mail else {}
    row = {
        "reseller_id": rec.reseller,
        "domain": rec.domain,
        "public_settings": rec.publicSettings.model_dump(exclude_unset=True),
        "mail_server": mail_server,
        "deleted": rec.deleted,
    }
    if mail is not None and mail.password is not None:
        row["mail_password_encrypted"] = ctx.secret_box.encrypt(mail.password)
    return _optional(row, "mail_password_encrypted", rec.mail_password_encrypted)


def notification_setting_row(rec: r.NotificationSettingRecord, _ctx: RowContext) -> Row:
    return _fields(rec, "id", "notification_type", "email", "enabled", reseller_id="reseller")


def project_row(rec: cr.ProjectRecord, _ctx: RowContext) -> Row:
    return _fields(rec, "id", "name", client_id="client")


def region_row(rec: cr.RegionRecord, _ctx: RowContext) -> Row:
    return _fields(rec, "id", "name")


def listener_row(rec: cr.ListenerRecord, _ctx: RowContext) -> Row:
    row = _fields(
        rec,
        "id project_id region_id name allowed_cidrs connection_limit creator_task_id",
        "load_balancer_id operating_status pool_count protocol protocol_port",
        "provisioning_status secret_id sni_secret_id task_id timeout_client_data",
        "timeout_member_connect timeout_member_data",
    )
    row.update(
        insert_headers=dict(rec.insert_headers),
        stats=rec.stats.model_dump(),
        user_list=[u.model_dump() for u in rec.user_list],
    )
    return row


def lifecycle_policy_row(rec: cr.LifecyclePolicyRecord, _ctx: RowContext) -> Row:
    row = _fields(rec, "id", "project_id", "region_id", "name", "action", "status", "user_id")
    # As written: the two schedule variants carry different fields.
    row["schedules"] = [s.model_dump(exclude_unset=True) for s in rec.schedules]
    row["volumes"] = [v.model_dump() for v in rec.volumes]
    return row


def price_row(rec: PriceRecord, _ctx: RowContext) -> Row:
    return prices.price_row(rec)


def amqp_subscription_row(rec: cr.AmqpSubscriptionRecord, ctx: RowContext) -> Row:
    row = _fields(
        rec, "id", "exchange", "routing_key", "receive_child_client_events", client_id="client"
    )
    row["connection_string_encrypted"] = rec.connection_string_encrypted or ctx.secret_box.encrypt(
        rec.connection_string or ""
    )
    return row


# An addendum's stored fields by their paths (attrgetter follows the dots), and the
# columns they go to: the field table's (billing/addendums/fields.py).
_ADDENDUM_VALUES = attrgetter(*(f.path for f in STORED_FIELDS))


def addendum_row(rec: Any, _ctx: RowContext) -> Row:
    # derive_row adds the caseless name copies the name filters search; an upsert
    # must carry them, or a renamed plan would keep its old folded name.
    return derive_row(dict(zip(STORED_COLUMNS, _ADDENDUM_VALUES(rec), strict=True)))
