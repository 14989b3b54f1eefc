"""Bulk loads on PostgreSQL: counters rebuilt once instead of kept row by row.

The count triggers (migrations 0005 and 0011) cost a bulk load about three times its time on
PostgreSQL. For a large load the importer defers them for its own transaction and
rebuilds the counter tables from the addendums with one GROUP BY each afterwards.
The counters stay exact: the rebuild reads the same transaction's rows. SQLite keeps
its row triggers, which cost it little.
"""

from __future__ import annotations

import heapq
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from datetime import UTC, date, datetime
from itertools import repeat
from operator import lshift, or_
from typing import Any, BinaryIO

from sqlalchemy import Table, text
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.billing.addendums.creation_days import day_number
from cloudadmin.db.dialect import copy_rows, copy_text, set_aside_primary_key
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
    """The counter tables' rows, in the order of their keys (see ``rebuild_counts``).

    addendum_counts' rows come as COPY text in a temporary file (one row per counter,
    millions of them for a large load); the owner closes it (``RowCounter.close``)."""

    counts: BinaryIO  # client_id, reseller_key, status, product_id, shard, n
    totals: list[tuple[Any, ...]]  # status, product_id, shard, n
    days: list[tuple[Any, ...]]  # day, shard, n, min_id, max_id


# A counter's key (client_id, reseller_key, status, product_id, shard) packed into one
# integer: client_id << _CLIENT_SHIFT | combination << _SHARD_BITS | shard, where the
# combination is the index of (reseller_key, status, product_id) in the load's list of
# them (resellers times statuses times products that occur: at most 21 × 4 × 13 for the
# bench's 20 resellers; 2^24 at most, a load with more fails). client_id is a 32-bit id,
# so a key fits the 64-bit integers of an ``array``.
_SHARD_BITS = 4
_COMBINATION_BITS = 24
_CLIENT_SHIFT = _SHARD_BITS + _COMBINATION_BITS
_IN_CLIENT = (1 << _CLIENT_SHIFT) - 1
assert 1 << _SHARD_BITS == SHARDS
# Keys counted together, as one sorted run: about 100 MB of Counter at most.
RUN_KEYS = 1 << 20
# Keys kept in memory before they go to the spill file, and read back at once per run
# while the runs are merged.
_BUFFERED = 1 << 16


class RowCounter:
    """The counter rows of addendums, counted batch by batch as a bulk load COPYs them
    (``add``), as ``rebuild_counts``' GROUP BYs would find them in the table (``rows``),
    in memory that does not grow with the rows.

    A counter for every key held in memory took about 150 bytes a key, and a key for
    about every second addendum of ten million (5.4 million keys over 100,000 clients,
    13 products, 4 statuses and 16 shards): the loading process grew from 0.28 GB to
    1.05 GB during the COPY, and to 1.58 GB
    once ``rows`` had put them in order. So a batch's keys are packed into integers
    (``_CLIENT_SHIFT``) by chained ``map`` calls that run in C (about 0.5 µs a row,
    against 0.8-1 µs for a ``Counter`` of tuples that gains new keys) and written to a
    temporary file as they come. ``rows``, which runs in a thread while the server
    builds the indexes, counts them run by run (``RUN_KEYS``), sorts each run, and
    merges the runs into the counters' COPY text, client by client: the memory it takes
    is a run's, whatever the number of rows. The creation days' counters stay in a dict:
    a few thousand days times the shards.
    """

    def __init__(self, columns: Sequence[str], run_keys: int = RUN_KEYS) -> None:
        at = {name: index for index, name in enumerate(columns)}
        self._at = tuple(
            at[name] for name in ("id", "client_id", "reseller_id", "status", "product_id")
        )
        self._created_at = at["created_at"]
        self._run_keys = run_keys
        # (reseller_key, status, product_id) -> its index << _SHARD_BITS
        self._combinations: dict[tuple[Any, ...], int] = {}
        self._keys = array("q")
        # Temporary files (removed once closed): the keys as they come, the sorted runs,
        # the counters' COPY text. close() closes them.
        self._files = ExitStack()
        self._spilled, self._runs, self._counts = (
            self._files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115 (the stack)
            for _ in range(3)
        )
        # (day, shard) -> [n, min_id, max_id]
        self._days: dict[tuple[int, int], list[int]] = {}

    def close(self) -> None:
        self._files.close()

    def add(self, batch: Sequence[Sequence[Any]]) -> None:
        ident_at, client_at, reseller_at, status_at, product_at = self._at
        ids = [row[ident_at] for row in batch]
        shards = [ident % SHARDS for ident in ids]
        resellers = [row[reseller_at] for row in batch]
        combinations = list(zip(
            map(_RESELLER_KEY.get, resellers, resellers),
            [row[status_at] for row in batch],
            [row[product_at] for row in batch],
            strict=True,
        ))  # fmt: skip
        packed = list(map(self._combinations.get, combinations))
        if None in packed:  # a combination not seen before: a few times a load
            packed = [self._combination(combination) for combination in combinations]
        self._keys.extend(
            map(
                or_,
                map(lshift, [row[client_at] for row in batch], repeat(_CLIENT_SHIFT)),
                map(or_, packed, shards),
            )
        )
        if len(self._keys) >= _BUFFERED:
            self._spill()
        self._add_days(batch, ids, shards)

    def _combination(self, combination: tuple[Any, ...]) -> int:
        found = self._combinations.get(combination)
        if found is None:
            if len(self._combinations) >= 1 << _COMBINATION_BITS:
                raise ValueError("more (reseller, status, product) combinations than counted")
            found = self._combinations[combination] = len(self._combinations) << _SHARD_BITS
        return found

    def _spill(self) -> None:
        self._keys.tofile(self._spilled)
        del self._keys[:]

    def _add_days(self, batch: Sequence[Sequence[Any]], ids: list[int], shards: list[int]) -> None:
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
        """The counters of every row added; once."""
        self._spill()
        runs = self._sorted_runs()
        # The combinations in the key's order: packed -> (its place, its COPY text).
        combinations = sorted(self._combinations.items())
        place = {packed: at for at, (_, packed) in enumerate(combinations)}
        spelled = {packed: "\t".join(map(_copy_text, c)) for c, packed in combinations}
        totals: dict[int, int] = {}  # packed combination | shard -> n
        out, client = self._counts, None
        lines: list[str] = []
        keys: list[tuple[int, int, int]] = []  # one client's: (place, combination | shard, n)
        for key, n in _summed(heapq.merge(*runs)):
            if key >> _CLIENT_SHIFT != client:
                _write_client(client, keys, spelled, lines)
                client, keys = key >> _CLIENT_SHIFT, []
                if len(lines) >= _BUFFERED:
                    out.write("".join(lines).encode())
                    lines.clear()
            in_client = key & _IN_CLIENT
            keys.append((place[in_client & ~(SHARDS - 1)], in_client, n))
            totals[in_client] = totals.get(in_client, 0) + n
        _write_client(client, keys, spelled, lines)
        out.write("".join(lines).encode())
        out.seek(0)
        combination_of = {packed: c for c, packed in combinations}
        by_product: dict[tuple[Any, ...], int] = {}
        for in_client, n in totals.items():
            _reseller, status, product_id = combination_of[in_client & ~(SHARDS - 1)]
            total = (status, product_id, in_client & (SHARDS - 1))
            by_product[total] = by_product.get(total, 0) + n
        return CounterRows(
            out,
            [(*key, n) for key, n in sorted(by_product.items())],
            [(*key, *bounds) for key, bounds in sorted(self._days.items())],
        )

    def _sorted_runs(self) -> list[Iterator[tuple[int, int]]]:
        """The spilled keys counted run by run, each run sorted and written to a file;
        an iterator of (key, n) over each."""
        spilled, runs = self._spilled, self._runs
        spilled.seek(0)
        places: list[tuple[int, int]] = []  # each run's offset and number of keys
        while True:
            keys = array("q")
            with suppress(EOFError):  # the last, shorter run (fromfile keeps what it read)
                keys.fromfile(spilled, self._run_keys)
            if not keys:
                break
            counted = Counter(keys)
            del keys
            ordered = array("q", sorted(counted))
            places.append((runs.tell(), len(ordered)))
            ordered.tofile(runs)
            array("q", map(counted.__getitem__, ordered)).tofile(runs)
        return [_read_run(runs, offset, size) for offset, size in places]


def _read_run(runs: BinaryIO, offset: int, size: int) -> Iterator[tuple[int, int]]:
    """A sorted run's (key, n), read ``_BUFFERED`` at a time."""
    for start in range(0, size, _BUFFERED):
        step = min(_BUFFERED, size - start)
        keys, counts = array("q"), array("q")
        runs.seek(offset + 8 * start)
        keys.fromfile(runs, step)
        runs.seek(offset + 8 * (size + start))
        counts.fromfile(runs, step)
        yield from zip(keys, counts, strict=True)


def _summed(merged: Iterator[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """(key, n) pairs in key order with each key once (a key may be in several runs)."""
    last, total = None, 0
    for key, n in merged:
        if key == last:
            total += n
            continue
        if last is not None:
            yield last, total
        last, total = key, n
    if last is not None:
        yield last, total


def _write_client(
    client: int | None, keys: list[tuple[int, int, int]], spelled: dict[int, str], lines: list[str]
) -> None:
    """One client's counter rows as COPY text, in the key's order."""
    if client is None:
        return
    keys.sort()
    for _, in_client, n in keys:
        combination, shard = in_client & ~(SHARDS - 1), in_client & (SHARDS - 1)
        lines.append(f"{client}\t{spelled[combination]}\t{shard}\t{n}\n")


def _copy_text(value: Any) -> str:
    """A value in COPY's text format (the few characters it gives a meaning escaped)."""
    return (
        str(value)
        .replace("\\", "\\\\")
        .replace("\t", "\\t")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
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
    await copy_text(conn, _table(AddendumCount), _COLUMNS[AddendumCount], counted.counts)
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


def _table(model: type[Any]) -> Table:
    table: Table = model.__table__
    return table


async def _copy(conn: AsyncConnection, model: type[Any], rows: list[tuple[Any, ...]]) -> None:
    await copy_rows(conn, _table(model), _COLUMNS[model], rows)
