"""Stored rows turned back into load records: importer/rows.py read backwards.

Every field the loader takes is written, nulls and defaults included, so that what
is loaded is exactly what was stored. Secrets are written in their stored form
(hashes, encrypted values), never in clear.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cloudadmin.kit.timeparse import isoformat_z

Row = Mapping[Any, Any]  # a RowMapping of the table
Record = dict[str, Any]


def _instant(value: datetime | None) -> str | None:
    return isoformat_z(value) if value is not None else None


def client_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "email": row["email"],
        "companyName": row["company_name"],
        "name": row["name"],
        "status": row["status"],
        "capabilities": row["capabilities"],
        "serviceStatuses": row["service_statuses"],
        "paidFeatures": row["paid_features"],
        "freeFeatures": row["free_features"],
        "service_availability": row["service_availability"],
        "entryBaseDomain": row["entry_base_domain"],
        "deleted": row["deleted"],
        "bill_type": row["bill_type"],
        "is_test": row["is_test"],
        "phone": row["phone"],
        "website": row["website"],
        "signup_process": row["signup_process"],
        "custom_id": row["custom_id"],
        "country_code": row["country_code"],
        "seller": row["seller_id"],
        "resellers": row["reseller_id"],
        "client_type": row["client_type"],
        "owner": row["owner"],
        "created_at": _instant(row["created_at"]),
    }


def user_record(row: Row, groups: list[int]) -> Record:
    return {
        "id": row["id"],
        "email": row["email"],
        "client": row["client_id"],
        "groups": groups,
        "name": row["name"],
        "lang": row["lang"],
        "phone": row["phone"],
        "company": row["company"],
        "deleted": row["deleted"],
        "activated": row["activated"],
        "sso_auth": row["sso_auth"],
        "two_fa": row["two_fa"],
        "auth_types": row["auth_types"],
        "user_type": row["user_type"],
        "is_active": row["is_active"],
        "superuser": row["superuser"],
        "password_hash": row["password_hash"],
        "date_joined": _instant(row["date_joined"]),
    }


def api_key_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "user": row["user_id"],
        "key_hash": row["secret_hash"],
        "name": row["name"],
        "description": row["description"],
        "role": row["role_id"],
        "expires_at": _instant(row["expires_at"]),
        "revoked": row["revoked"],
        "created_at": _instant(row["created_at"]),
        "last_usage": _instant(row["last_usage"]),
    }


def seller_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "email": row["email"],
        "full_name": row["full_name"],
        "reseller": row["reseller_id"],
        "phone": row["phone"],
        "company": row["company"],
        "date_joined": _instant(row["date_joined"]),
        "activated": row["activated"],
        "deleted": row["deleted"],
    }


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


def notification_setting_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "reseller": row["reseller_id"],
        "notification_type": row["notification_type"],
        "email": row["email"],
        "enabled": row["enabled"],
    }


def project_record(row: Row) -> Record:
    return {"id": row["id"], "client": row["client_id"], "name": row["name"]}


def region_record(row: Row) -> Record:
    return {"id": row["id"], "name": row["name"]}


LISTENER_FIELDS = (
    "id", "project_id", "region_id", "name", "allowed_cidrs", "connection_limit",
    "creator_task_id", "insert_headers", "load_balancer_id", "operating_status", "pool_count",
    "protocol", "protocol_port", "provisioning_status", "secret_id", "sni_secret_id", "stats",
    "task_id", "timeout_client_data", "timeout_member_connect", "timeout_member_data",
    "user_list",
)  # fmt: skip


def listener_record(row: Row) -> Record:
    return {name: row[name] for name in LISTENER_FIELDS}


def lifecycle_policy_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "project_id": row["project_id"],
        "region_id": row["region_id"],
        "name": row["name"],
        "action": row["action"],
        "status": row["status"],
        "user_id": row["user_id"],
        "schedules": row["schedules"],
        "volumes": row["volumes"],
    }


def addendum_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "client_id": row["client_id"],
        "payer_id": row["payer_id"],
        "provider_id": row["provider_id"],
        "reseller_id": row["reseller_id"],
        "status": row["status"],
        "active_range": {"start": _instant(row["active_start"]),
                         "end": _instant(row["active_end"])},
        "created_at": _instant(row["created_at"]),
        "currency": {"id": row["currency_id"], "char_code": row["currency_char_code"],
                     "symbol": row["currency_symbol"]},
        "plan": {"id": row["plan_id"], "name": row["plan_name"]},
        "product": {"id": row["product_id"], "name": row["product_name"],
                    "internal_name": row["product_internal_name"]},
    }  # fmt: skip


def amqp_subscription_record(row: Row) -> Record:
    return {
        "id": row["id"],
        "client": row["client_id"],
        "connection_string_encrypted": row["connection_string_encrypted"],
        "exchange": row["exchange"],
        "routing_key": row["routing_key"],
        "receive_child_client_events": row["receive_child_client_events"],
    }


def price_record(row: Row) -> Record:
    # Amounts are stored as decimal text; written as JSON strings they stay exact (the
    # loader reads a string amount as the decimal it spells).
    return {
        "region_id": row["region_id"],
        "currency_code": row["currency_code"],
        "flavors": row["flavors"],
        "volume_types": row["volume_types"],
        "public_ipv4_per_hour": row["public_ipv4_per_hour"],
        "tax_percent": row["tax_percent"],
        "discount_percent": row["discount_percent"],
    }
