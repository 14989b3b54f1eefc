"""Billing addendums, and the exact counts kept beside them (docs/billing.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import BigIntKey, GivenIntKey, Str255
from cloudadmin.kit.caseless import folded_default

# Folded copies kept beside the names they are computed from (kit/caseless.py).
FOLDED_COLUMNS: dict[str, str] = {
    "plan_name_folded": "plan_name",
    "product_name_folded": "product_name",
}


class Addendum(Base):
    __tablename__ = "addendums"

    id: Mapped[BigIntKey]
    client_id: Mapped[int] = mapped_column(Integer, fk("clients.id"))
    payer_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    provider_id: Mapped[int | None] = mapped_column(BigInteger)
    reseller_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    status: Mapped[str] = mapped_column(String(10))
    active_start: Mapped[datetime]
    active_end: Mapped[datetime | None]
    created_at: Mapped[datetime]
    currency_id: Mapped[int]
    currency_char_code: Mapped[str] = mapped_column(String(3))
    currency_symbol: Mapped[str] = mapped_column(String(5))
    plan_id: Mapped[int]
    plan_name: Mapped[Str255]
    product_id: Mapped[int]
    product_name: Mapped[Str255]
    product_internal_name: Mapped[str] = mapped_column(String(50))
    # Caseless copies for the name filters (kit.caseless.fold); filled on insert from
    # the names, and by billing.addendums.derive_row() for upserts.
    plan_name_folded: Mapped[str] = mapped_column(Text, default=folded_default("plan_name"))
    product_name_folded: Mapped[str] = mapped_column(Text, default=folded_default("product_name"))

    __table_args__ = (
        # a client's addendums in id order: a page of the largest client reads 25 entries.
        Index("ix_addendums_client_id_id", "client_id", "id"),
        # status + product filters, in id order (the default ordering) without a sort.
        Index("ix_addendums_product_id_status_id", "product_id", "status", "id"),
        # creation ranges: their ids without reading the rows; ordering=created_at, id.
        Index("ix_addendums_created_at_id", "created_at", "id"),
        # plan and product name searches walk the few distinct names here (PostgreSQL).
        Index("ix_addendums_plan_name_folded", "plan_name_folded"),
        Index("ix_addendums_product_name_folded", "product_name_folded"),
    )


class AddendumCount(Base):
    """Addendums per (client, reseller, status, product), kept by database triggers.

    ``reseller_key`` is ``reseller_id`` with null spelled -1 (reseller ids are >= 0),
    so that the key has no nulls. Rows may hold n = 0. Spread over ``shard = id % 16``
    for the reason given under AddendumTotal (a large client's rows are hot on load).
    """

    __tablename__ = "addendum_counts"

    client_id: Mapped[GivenIntKey]
    reseller_key: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    status: Mapped[str] = mapped_column(String(10), primary_key=True)
    product_id: Mapped[GivenIntKey]
    shard: Mapped[GivenIntKey]
    n: Mapped[int] = mapped_column(BigInteger)


class AddendumTotal(Base):
    """Addendums per (status, product) over the whole table, kept by database triggers.

    Spread over ``shard = id % 16`` (migration 0009): a load of many addendums in one
    transaction updates each counter row a sixteenth as often (PostgreSQL keeps every
    version of a row updated in an open transaction; long version chains make loading
    quadratic), while an unfiltered count still sums only ~800 rows. Bulk loads on
    PostgreSQL skip the triggers and rebuild the counters (bulk_counts). A count sums
    the shards.
    """

    __tablename__ = "addendum_totals"

    status: Mapped[str] = mapped_column(String(10), primary_key=True)
    product_id: Mapped[GivenIntKey]
    shard: Mapped[GivenIntKey]
    n: Mapped[int] = mapped_column(BigInteger)


class AddendumDay(Base):
    """Addendums per UTC day of creation, kept by database triggers (migration 0011).

    ``day`` counts days since 1970-01-01. ``min_id`` and ``max_id`` bound the ids of
    every addendum counted in the row: they widen on insert and on an update that moves
    an addendum here, and never narrow (a delete leaves them as they are), so they stay
    bounds, if loose ones, until a bulk load rebuilds them. A creation range is counted
    from these rows and its page walks the primary key between the bounds
    (docs/billing.md, "Counting"). Spread over ``shard = id % 16`` as AddendumTotal is:
    a day's addendums loaded in one transaction would otherwise update one row each.
    """

    __tablename__ = "addendum_days"

    day: Mapped[GivenIntKey]
    shard: Mapped[GivenIntKey]
    n: Mapped[int] = mapped_column(BigInteger)
    min_id: Mapped[int] = mapped_column(BigInteger)
    max_id: Mapped[int] = mapped_column(BigInteger)
