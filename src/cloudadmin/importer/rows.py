"""Validated records turned into table rows (wire names -> column names).

A row leaves out a column the document did not give when the column must keep
its stored value on a second load: creation instants (a default of "now" would
change on every load) and secrets the document does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cloudadmin.billing.addendums.names import derive_row
from cloudadmin.cloud.pricing import records as prices
from cloudadmin.cloud.pricing.records import PriceRecord
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


def client_row(rec: r.ClientRecord, _ctx: RowContext) -> Row:
    row = {
        "id": rec.id,
        "email": rec.email,
        "name": rec.name,
        "status": rec.status,
        "company_name": rec.companyName,
        "company_name_folded": fold(rec.companyName),  # as the model sets it for the API
        "capabilities": list(rec.capabilities),
        "service_statuses": {k: v.model_dump() for k, v in rec.serviceStatuses.items()},
        "paid_features": _features(rec.paidFeatures),
        "free_features": _features(rec.freeFeatures),
        "entry_base_domain": rec.entryBaseDomain,
        "deleted": rec.deleted,
        "bill_type": rec.bill_type,
        "is_test": rec.is_test,
        "phone": rec.phone,
        "website": rec.website,
        "signup_process": rec.signup_process,
        "custom_id": rec.custom_id,
        "country_code": rec.country_code.upper() if rec.country_code else None,
        "seller_id": rec.seller,
        "reseller_id": rec.resellers,
        "client_type": rec.client_type,
        "owner": rec.owner,
    }
    _optional(row, "service_availability", rec.service_availability)
    return _optional(row, "created_at", rec.created_at)


def _features(value: Mapping[Any, list[r.Feature]]) -> dict[str, list[dict[str, Any]]]:
    return {service: [f.model_dump() for f in items] for service, items in value.items()}


def user_row(rec: r.UserRecord, ctx: RowContext) -> Row:
    company = rec.company if rec.company is not None else ctx.accounts[rec.client].company_name
    row = {
        "id": rec.id,
        "email": rec.email,
        "name": rec.name,
        "lang": rec.lang,
        "phone": rec.phone,
        "company": company,
        "client_id": rec.client,
        "deleted": rec.deleted,
        "activated": rec.activated,
        "sso_auth": rec.sso_auth,
        "two_fa": rec.two_fa,
        "auth_types": list(rec.auth_types),
        "user_type": rec.user_type,
        "is_active": rec.is_active,
        "superuser": rec.superuser,
    }
    _optional(row, "date_joined", rec.date_joined)
    if rec.password is not None:
        row["password_hash"] = hash_password(rec.password)
    return _optional(row, "password_hash", rec.password_hash)


def api_key_row(rec: r.ApiKeyRecord, _ctx: RowContext) -> Row:
    row = {
        "id": rec.id,
        "user_id": rec.user,
        "name": rec.name,
        "secret_hash": rec.stored_hash(),
        "expires_at": rec.expires_at,
        "revoked": rec.revoked,
    }
    # Older documents do not carry these; a load of one keeps what the API stored.
    _optional(row, "description", rec.description)
    _optional(row, "role_id", rec.role)
    _optional(row, "last_usage", rec.last_usage)
    return _optional(row, "created_at", rec.created_at)


def seller_row(rec: r.SellerRecord, ctx: RowContext) -> Row:
    company = rec.company if rec.company is not None else ctx.accounts[rec.reseller].company_name
    row = {
        "id": rec.id,
        "email": rec.email,
        "full_name": rec.full_name,
        "phone": rec.phone,
        "company": company,
        "reseller_id": rec.reseller,
        "activated": rec.activated,
        "deleted": rec.deleted,
    }
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
    return {
        "id": rec.id,
        "reseller_id": rec.reseller,
        "notification_type": rec.notification_type,
        "email": rec.email,
        "enabled": rec.enabled,
    }


def project_row(rec: r.ProjectRecord, _ctx: RowContext) -> Row:
    return {"id": rec.id, "client_id": rec.client, "name": rec.name}


def region_row(rec: r.RegionRecord, _ctx: RowContext) -> Row:
    return {"id": rec.id, "name": rec.name}


def listener_row(rec: r.ListenerRecord, _ctx: RowContext) -> Row:
    return {
        "id": rec.id,
        "project_id": rec.project_id,
        "region_id": rec.region_id,
        "name": rec.name,
        "allowed_cidrs": rec.allowed_cidrs,
        "connection_limit": rec.connection_limit,
        "creator_task_id": rec.creator_task_id,
        "insert_headers": dict(rec.insert_headers),
        "load_balancer_id": rec.load_balancer_id,
        "operating_status": rec.operating_status,
        "pool_count": rec.pool_count,
        "protocol": rec.protocol,
        "protocol_port": rec.protocol_port,
        "provisioning_status": rec.provisioning_status,
        "secret_id": rec.secret_id,
        "sni_secret_id": rec.sni_secret_id,
        "stats": rec.stats.model_dump(),
        "task_id": rec.task_id,
        "timeout_client_data": rec.timeout_client_data,
        "timeout_member_connect": rec.timeout_member_connect,
        "timeout_member_data": rec.timeout_member_data,
        "user_list": [u.model_dump() for u in rec.user_list],
    }


def lifecycle_policy_row(rec: r.LifecyclePolicyRecord, _ctx: RowContext) -> Row:
    return {
        "id": rec.id,
        "project_id": rec.project_id,
        "region_id": rec.region_id,
        "name": rec.name,
        "action": rec.action,
        "status": rec.status,
        "user_id": rec.user_id,
        # As written: the two schedule variants carry different fields.
        "schedules": [s.model_dump(exclude_unset=True) for s in rec.schedules],
        "volumes": [v.model_dump() for v in rec.volumes],
    }


def price_row(rec: PriceRecord, _ctx: RowContext) -> Row:
    return prices.price_row(rec)


def amqp_subscription_row(rec: r.AmqpSubscriptionRecord, ctx: RowContext) -> Row:
    return {
        "id": rec.id,
        "client_id": rec.client,
        "connection_string_encrypted": rec.connection_string_encrypted
        or ctx.secret_box.encrypt(rec.connection_string or ""),
        "exchange": rec.exchange,
        "routing_key": rec.routing_key,
        "receive_child_client_events": rec.receive_child_client_events,
    }


def addendum_row(rec: r.AddendumRecord, _ctx: RowContext) -> Row:
    # derive_row adds the caseless name copies the name filters search; an upsert
    # must carry them, or a renamed plan would keep its old folded name.
    return derive_row(
        {
            "id": rec.id,
            "client_id": rec.client_id,
            "payer_id": rec.payer_id,
            "provider_id": rec.provider_id,
            "reseller_id": rec.reseller_id,
            "status": rec.status,
            "active_start": rec.active_range.start,
            "active_end": rec.active_range.end,
            "created_at": rec.created_at,
            "currency_id": rec.currency.id,
            "currency_char_code": rec.currency.char_code,
            "currency_symbol": rec.currency.symbol,
            "plan_id": rec.plan.id,
            "plan_name": rec.plan.name,
            "product_id": rec.product.id,
            "product_name": rec.product.name,
            "product_internal_name": rec.product.internal_name,
        }
    )
