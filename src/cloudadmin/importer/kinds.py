"""The top-level keys of a document: record model, table, key field and references."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import ColumnElement, Table, func

from cloudadmin.cloud.pricing.records import PriceRecord
from cloudadmin.db import models as m
from cloudadmin.db.base import table_of
from cloudadmin.importer import cloud_records as cr
from cloudadmin.importer import records as r
from cloudadmin.importer import rows
from cloudadmin.kit.caseless import fold

SEALED_FIELDS = ("mail_password_encrypted", "connection_string_encrypted")


@dataclass(frozen=True, slots=True)
class Ref:
    """A field holding the id of another record."""

    field: str
    target: str  # top-level key of the referenced kind
    reseller_only: bool = False  # the target must be a client with client_type reseller


@dataclass(frozen=True, slots=True)
class Unique:
    """A field the database keeps unique besides the id (a unique index)."""

    field: str
    column: Callable[[Table], ColumnElement[Any]]  # the indexed expression
    normalize: Callable[[Any], Any] = lambda value: value
    # Unique among live rows only: which records count, and which stored rows.
    counts: Callable[[Any], bool] = lambda record: True
    live: Callable[[Table], ColumnElement[bool]] | None = None


LOWER_EMAIL = Unique("email", lambda t: func.lower(t.c.email), str.lower)
# As the API checks it (iam/clients/repository.company_taken): among accounts not
# deleted, compared folded, by the same fold() that fills the stored column.
COMPANY_NAME = Unique(
    "companyName",
    lambda t: t.c.company_name_folded,
    fold,
    counts=lambda record: not record.deleted,
    live=lambda t: t.c.deleted.is_(False),
)


@dataclass(frozen=True)
class Kind:
    key: str
    model: type[BaseModel]  # import records, and models shared with another door
    table: Table
    to_row: Callable[[Any, rows.RowContext], rows.Row]
    identity: str = "id"  # the field that is the table's primary key
    refs: tuple[Ref, ...] = field(default_factory=tuple)
    unique: tuple[Unique, ...] = field(default_factory=tuple)

    @cached_property
    def sealed(self) -> tuple[str, ...]:
        """Its fields holding an encrypted value in its stored form (checked with the key).

        Read from the model once: pydantic answers an attribute a record lacks slowly."""
        return tuple(name for name in SEALED_FIELDS if name in self.model.model_fields)

    @cached_property
    def adapter(self) -> TypeAdapter[list[Any]]:
        # Validating a chunk as one list is several times faster than record by record.
        return TypeAdapter(list[self.model])  # type: ignore[name-defined]


CLIENT = Ref("client", "clients")
RESELLER = Ref("reseller", "clients", reseller_only=True)

KINDS: tuple[Kind, ...] = (
    Kind(
        "clients", r.ClientRecord, table_of(m.Client), rows.client_row,
        refs=(Ref("resellers", "clients", reseller_only=True), Ref("seller", "sellers")),
        unique=(COMPANY_NAME,),
    ),
    Kind("users", r.UserRecord, table_of(m.User), rows.user_row, refs=(CLIENT,),
         unique=(LOWER_EMAIL,)),
    Kind("api_keys", r.ApiKeyRecord, table_of(m.ApiKey), rows.api_key_row,
         refs=(Ref("user", "users"),)),
    Kind("sellers", r.SellerRecord, table_of(m.Seller), rows.seller_row, refs=(RESELLER,),
         unique=(LOWER_EMAIL,)),
    Kind("branding", r.BrandingRecord, table_of(m.Branding), rows.branding_row,
         identity="reseller", refs=(RESELLER,)),
    Kind("notification_settings", r.NotificationSettingRecord, table_of(m.NotificationSetting),
         rows.notification_setting_row, refs=(RESELLER,)),
    Kind("projects", cr.ProjectRecord, table_of(m.Project), rows.project_row, refs=(CLIENT,)),
    Kind("regions", cr.RegionRecord, table_of(m.Region), rows.region_row),
    Kind("listeners", cr.ListenerRecord, table_of(m.Listener), rows.listener_row,
         refs=(Ref("project_id", "projects"), Ref("region_id", "regions"))),
    Kind("lifecycle_policies", cr.LifecyclePolicyRecord, table_of(m.LifecyclePolicy),
         rows.lifecycle_policy_row,
         refs=(Ref("project_id", "projects"), Ref("region_id", "regions"))),
    Kind("addendums", r.AddendumRecord, table_of(m.Addendum), rows.addendum_row,
         refs=(Ref("client_id", "clients"),)),
    Kind("amqp_subscriptions", cr.AmqpSubscriptionRecord, table_of(m.AmqpSubscription),
         rows.amqp_subscription_row, refs=(CLIENT,),
         unique=(Unique("client", lambda t: t.c.client_id),)),
    Kind("prices", PriceRecord, table_of(m.PriceCatalogue), rows.price_row,
         identity="region_id", refs=(Ref("region_id", "regions"),)),
)  # fmt: skip

BY_KEY = {kind.key: kind for kind in KINDS}
