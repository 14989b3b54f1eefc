"""Accounts (clients), their users, groups and API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, Integer, String, Table, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import AccountRef, fk
from cloudadmin.db.types import (
    Email,
    FalseByDefault,
    GivenIntKey,
    IntKey,
    JSONType,
    LongText,
    Str255,
    TrueByDefault,
    UTCDateTime,
    utcnow,
)
from cloudadmin.kit.caseless import fold

# The fixed groups of the real system: id -> name.
GROUPS: dict[int, str] = {
    1: "Administrators",
    2: "Users",
    5: "Engineers",
    3009: "Purge and Prefetch only (API+Web)",
    3022: "Purge and Prefetch only (API)",
}
ADMINISTRATORS = 1
ENGINEERS = 5


class Group(Base):
    __tablename__ = "groups"

    id: Mapped[GivenIntKey]
    name: Mapped[str] = mapped_column(String(150), unique=True)


user_groups = Table(
    "user_groups",
    Base.metadata,
    Column("user_id", Integer, fk("users.id", ondelete="CASCADE"), primary_key=True),
    Column("group_id", Integer, fk("groups.id"), primary_key=True),
)


class _Contact:
    """The columns an account and a user have alike; the first three stay first in the
    table (an export lists a row's fields in this order)."""

    id: Mapped[IntKey] = mapped_column(sort_order=-1)
    email: Mapped[Email] = mapped_column(sort_order=-1)
    name: Mapped[Str255 | None] = mapped_column(sort_order=-1)
    phone: Mapped[str | None] = mapped_column(String(50))


class Client(_Contact, Base):
    """An account: common client, reseller or sales."""

    __tablename__ = "clients"

    status: Mapped[str] = mapped_column(String(20), default="active")
    company_name: Mapped[Str255]
    # The name as compared for uniqueness (docs/iam.md): set with company_name, below for
    # ORM writes and by the importer's rows; fold() is the same on both databases.
    company_name_folded: Mapped[str] = mapped_column(Text, index=True)
    capabilities: Mapped[list[str]] = mapped_column(JSONType, default=list)
    service_statuses: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    paid_features: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    free_features: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Personal product availability, {"CDN": true, "DNS": false, ...}; a product that is
    # absent inherits the default. On a reseller account: the default for its clients.
    service_availability: Mapped[dict[str, bool]] = mapped_column(
        JSONType, default=dict, server_default=text("'{}'")
    )
    entry_base_domain: Mapped[Str255 | None]
    deleted: Mapped[FalseByDefault]
    bill_type: Mapped[str] = mapped_column(String(50), default="postpaid")
    is_test: Mapped[FalseByDefault]
    website: Mapped[Str255 | None]
    signup_process: Mapped[str | None] = mapped_column(String(20))
    custom_id: Mapped[Str255 | None]
    country_code: Mapped[str | None] = mapped_column(String(2))
    seller_id: Mapped[int | None] = mapped_column(
        Integer, fk("sellers.id", ondelete="SET NULL", use_alter=True), index=True
    )
    reseller_id: Mapped[AccountRef | None]
    client_type: Mapped[str] = mapped_column(String(20), default="common")
    owner: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def is_reseller(self) -> bool:
        return self.client_type == "reseller"

    @validates("company_name")
    def _fold_company_name(self, _key: str, value: str) -> str:
        # The derived column follows its source in the same flush, on insert and update.
        self.company_name_folded = fold(value)
        return value


class User(_Contact, Base):
    """A person who signs in to an account."""

    __tablename__ = "users"

    lang: Mapped[str] = mapped_column(String(2), default="en")
    company: Mapped[Str255 | None]
    client_id: Mapped[AccountRef]
    deleted: Mapped[FalseByDefault]
    activated: Mapped[TrueByDefault]
    sso_auth: Mapped[FalseByDefault]
    two_fa: Mapped[FalseByDefault]
    auth_types: Mapped[list[str]] = mapped_column(JSONType, default=lambda: ["password"])
    user_type: Mapped[str] = mapped_column(String(20), default="common")
    is_active: Mapped[TrueByDefault]
    superuser: Mapped[FalseByDefault]
    password_hash: Mapped[LongText | None]
    date_joined: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    client: Mapped[Client] = relationship(lazy="raise")
    groups: Mapped[list[Group]] = relationship(
        secondary=user_groups, lazy="selectin", order_by=Group.id
    )

    @property
    def group_ids(self) -> set[int]:
        return {g.id for g in self.groups}


# A login e-mail names one user, regardless of letter case.
Index("uq_users_email_lower", func.lower(User.email), unique=True)


class ApiKey(Base):
    """An API key (an API token of /iam/clients/{clientId}/tokens); only a hash of its
    secret is stored. ``user_id`` is the user who issued it and whom it acts as,
    ``revoked`` its deletion flag, ``expires_at`` its exp_date."""

    __tablename__ = "api_keys"

    id: Mapped[IntKey]
    user_id: Mapped[int] = mapped_column(Integer, fk("users.id"), index=True)
    name: Mapped[Str255 | None]
    secret_hash: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime | None]
    revoked: Mapped[FalseByDefault]
    created_at: Mapped[datetime] = mapped_column(
        UTCDateTime, default=utcnow, server_default=func.current_timestamp()
    )
    description: Mapped[Str255 | None]
    # Written at most once a minute per key (auth/service.py), never per request.
    last_usage: Mapped[datetime | None]
    # The group the key acts with; NULL (keys of the CLI, imports): every group of its user.
    role_id: Mapped[int | None] = mapped_column(Integer, fk("groups.id"))


# The addendum list's company search, a LIKE '%…%' on the folded name: a GIN index of its
# trigrams (extension pg_trgm), on PostgreSQL only (migration 0018; ``info["only_on"]``
# tells tests/db/test_migrations.py, whose comparison does not read ``ddl_if``).
Index(
    "ix_clients_company_name_folded_trigrams",
    Client.company_name_folded,
    postgresql_using="gin",
    postgresql_ops={"company_name_folded": "gin_trgm_ops"},
    info={"only_on": "postgresql"},
).ddl_if(dialect="postgresql")
