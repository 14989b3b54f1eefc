"""Bulk loads on PostgreSQL: counters rebuilt once instead of kept row by row.

The count triggers (migrations 0005 and 0011) cost a bulk load about three times its time on
PostgreSQL. For a large load the importer defers them for its own transaction and
rebuilds the counter tables from the addendums with one GROUP BY each afterwards.
The counters stay exact: the rebuild reads the same transaction's rows. SQLite keeps
its row triggers, which cost it little.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.billing.addendums.creation_days import day_number
from cloudadmin.db.dialect import copy_rows, set_aside_primary_key
from cloudadmin.db.models.billing import AddendumCount, AddendumDay, AddendumTotal

# Below this many addendums in one document the triggers are cheaper than a rebuild.
BULK_THRESHOLD = 50_000
_SETTING = "cloudadmin.addendum_counts"
# Each counter row is kept per shard of the addendums' ids (``id % SHARDS``), so that
# concurrent writers of one key update different rows: the triggers' own number
# (migrations 0005 and 0011), which the rebuild and the recount must match.
SHARDS = 16
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
# The counters' reseller_key: -1 for an addendum without a reseller.
_RESELLER_KEY: dict[Any, int] = {None: -1}


def deferrable(conn: AsyncConnection, addendums: int) -> bool:
    return conn.dialect.name == "postgresql" and addendums >= BULK_THRESHOLD


async def defer_counting(conn: AsyncConnection) -> None:
    await conn.execute(text(f"SELECT set_config('{_SETTING}', 'deferred', true)"))


async def rebuild_counts(conn: AsyncConnection) -> None:
    """Recomputes the counter tables (same shards as the triggers), then lets the
    triggers count again for the rest of the transaction."""
    await _empty_counters(conn)
    # Key order, so that one client's rows (its list's count) share a few pages: in
    # the GROUP BY's hash order a client of 8,000 addendums had 715 rows on 611 pages,
    # and summing them cost 1.4 ms against 0.2 ms in key order (EXPLAIN ANALYZE, 1M
    # rows); the planner also judged a company search's per-client index scans dear
    # and read all 495,000 rows instead (65 ms).
    await conn.execute(
        text(
            "INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n) "
            f"SELECT client_id, coalesce(reseller_id, -1), status, product_id, id % {SHARDS}, "
            "count(*) "
            "FROM addendums GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
        )
    )
    await conn.execute(
        text(
            "INSERT INTO addendum_totals (status, product_id, shard, n) "
            f"SELECT status, product_id, id % {SHARDS}, count(*) FROM addendums GROUP BY 1, 2, 3"
        )
    )
    # Day order, so that a range of days reads few pages; the bounds become tight again.
    # addendum_day: the triggers' own function (migration 0011).
    await conn.execute(
        text(
            "INSERT INTO addendum_days (day, shard, n, min_id, max_id) "
            f"SELECT addendum_day(created_at), id % {SHARDS}, "
            "count(*), min(id), max(id) FROM addendums GROUP BY 1, 2 ORDER BY 1, 2"
        )
    )
    await conn.execute(text(f"SELECT set_config('{_SETTING}', 'on', true)"))


async def _empty_counters(conn: AsyncConnection) -> None:
    for table in ("addendum_counts", "addendum_totals", "addendum_days"):
        await conn.execute(text(f"DELETE FROM {table}"))


@dataclass(frozen=True)
class CounterRows:
    """The counter tables' rows, in the order of their keys (see ``rebuild_counts``)."""

    counts: list[tuple[Any, ...]]  # client_id, reseller_key, status, product_id, shard, n
    totals: list[tuple[Any, ...]]  # status, product_id, shard, n
    days: list[tuple[Any, ...]]  # day, shard, n, min_id, max_id


class RowCounter:
    """The counter rows of addendums, counted batch by batch as a bulk load COPYs them
    (``add``), as ``rebuild_counts``' GROUP BYs would find them in the table (``rows``).

    Counted as each batch goes by, and not kept: the load once kept every COPYed row for
    a count in a thread during the index builds, which cost about 3 s for a million
    addendums (py-spy) but 78 s for ten million and held them all in memory. A batch is
    counted column by column, so that the counting loops run in C (``Counter.update`` over
    zipped columns; the creation days' bounds from two dicts when the ids rise, as an
    export's do): 0.6 µs a row against 1.1 µs for a loop over the rows in Python. The keys
    are put in order once, client by client (a few dozen keys each), when ``rows`` is
    asked for.
    """

    def __init__(self, columns: Sequence[str]) -> None:
        at = {name: index for index, name in enumerate(columns)}
        self._at = tuple(
            at[name] for name in ("id", "client_id", "reseller_id", "status", "product_id")
        )
        self._created_at = at["created_at"]
        # (client_id, reseller_key, status, product_id, shard) -> n
        self._counts: Counter[tuple[Any, ...]] = Counter()
        self._same: dict[Any, Any] = {}
        # (day, shard) -> [n, min_id, max_id]
        self._days: dict[tuple[int, int], list[int]] = {}

    def add(self, batch: Sequence[Sequence[Any]]) -> None:
        ident_at, client_at, reseller_at, status_at, product_at = self._at
        ids = [row[ident_at] for row in batch]
        shards = [ident % SHARDS for ident in ids]
        # One object for each status in the keys, not one per key (ten million addendums
        # make 5.4 million keys). Client ids are not made one: looking each up cost 0.3 µs
        # a row, the processor's caches missing the old objects.
        same = self._same.setdefault
        resellers = [row[reseller_at] for row in batch]
        statuses = [row[status_at] for row in batch]
        self._counts.update(
            zip(
                [row[client_at] for row in batch],
                map(_RESELLER_KEY.get, resellers, resellers),
                map(same, statuses, statuses),
                [row[product_at] for row in batch],
                shards,
                strict=True,
            )
        )
        created_at = self._created_at
        keys = list(zip([_day(row[created_at]) for row in batch], shards, strict=True))
        if ids == sorted(ids):  # the first of a key holds its lowest id, the last its highest
            low = dict(zip(reversed(keys), reversed(ids), strict=True))
            high = dict(zip(keys, ids, strict=True))
        else:
            low, high = {}, {}
            for key, ident in zip(keys, ids, strict=True):
                if ident < low.get(key, ident + 1):
                    low[key] = ident
                if ident > high.get(key, ident - 1):
                    high[key] = ident
        days = self._days
        for key, n in Counter(keys).items():
            day = days.get(key)
            if day is None:
                days[key] = [n, low[key], high[key]]
            else:
                day[0] += n
                day[1] = min(day[1], low[key])
                day[2] = max(day[2], high[key])

    def rows(self) -> CounterRows:
        # The keys' order, client by client (a few dozen keys each), with no new key.
        counted = self._counts
        by_client: dict[int, list[tuple[Any, ...]]] = {}
        for key in counted:
            found = by_client.get(key[0])
            if found is None:
                by_client[key[0]] = [key]
            else:
                found.append(key)
        counts: list[tuple[Any, ...]] = []
        for client_id in sorted(by_client):
            keys = by_client.pop(client_id)
            keys.sort()
            counts.extend([(*key, counted[key]) for key in keys])
        totals: dict[tuple[Any, ...], int] = {}
        for _client_id, _reseller, status, product_id, shard, n in counts:
            totals[status, product_id, shard] = totals.get((status, product_id, shard), 0) + n
        return CounterRows(
            counts,
            [(*key, n) for key, n in sorted(totals.items())],
            [(*key, *bounds) for key, bounds in sorted(self._days.items())],
        )


def _day(t: datetime) -> int:
    """``day_number(t)``; an instant in UTC (as the loader reads them) without a call."""
    if t.tzinfo is UTC:
        return t.toordinal() - _EPOCH_ORDINAL
    return day_number(t)


async def store_counts(conn: AsyncConnection, counted: CounterRows) -> None:
    """Replaces the counter tables' rows with ``counted`` (by COPY), then lets the
    triggers count again for the rest of the transaction.

    addendum_counts' primary key is dropped for its rows and added again after them.
    The rows arrive in key order, yet inserting each into the index cost more than
    building it once: 3.3-3.6 s against 2.4-2.8 s (1.8-2.1 s for the rows, 0.6-0.7 s
    for the index) for 495,000 counters of a million addendums. The table stays locked
    (``ACCESS EXCLUSIVE``) until the transaction ends, so only a bulk load calls this:
    it holds the addendums locked anyway.
    """
    await _empty_counters(conn)
    restore = await set_aside_primary_key(conn, "addendum_counts")
    await _copy(conn, AddendumCount, counted.counts)
    for statement in restore:
        await conn.execute(text(statement))
    await _copy(conn, AddendumTotal, counted.totals)
    await _copy(conn, AddendumDay, counted.days)
    await conn.execute(text(f"SELECT set_config('{_SETTING}', 'on', true)"))


# The columns of CounterRows' rows, in order.
_COLUMNS: dict[type[Any], tuple[str, ...]] = {
    AddendumCount: ("client_id", "reseller_key", "status", "product_id", "shard", "n"),
    AddendumTotal: ("status", "product_id", "shard", "n"),
    AddendumDay: ("day", "shard", "n", "min_id", "max_id"),
}


async def _copy(conn: AsyncConnection, model: type[Any], rows: list[tuple[Any, ...]]) -> None:
    table: Table = model.__table__
    await copy_rows(conn, table, _COLUMNS[model], rows)
