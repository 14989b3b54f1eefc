"""A large load of addendums into an empty table on PostgreSQL: COPY, then indexes,
counters and statistics, each built once.

The row-by-row way (a batched upsert per chunk, every index and the count triggers
kept at each row, a deferred foreign-key check per row at commit) took 196 s for a
million addendums; a bulk COPY of the same rows with the same indexes takes a
ninth of that. When the table is empty there is nothing to upsert against, so the
loader takes the table for its transaction (``ACCESS EXCLUSIVE``: readers of
addendums wait for the load, which commits all or nothing anyway) and:

1. switches the table's own triggers off and sets its foreign keys and most secondary
   indexes aside (``db.dialect.set_aside_indexes``; ``KEPT_INDEXES`` stay);
2. COPYs the validated addendums as they come, in one COPY (``db.dialect.copy_rows``);
3. builds the indexes, adds the foreign keys back (checked by one join), stores the
   counters of the COPYed rows (``bulk_counts.RowCounter``, counted by the loader batch
   by batch as they went by, and ``store_counts``; addendum_counts' primary key is built after its
   rows), switches the triggers on and ANALYZEs.

All of it runs in the load's transaction: a failure at any step leaves the table,
its indexes and its counters as they were. Any other load (SQLite, a table that
holds rows, fewer addendums than ``BULK_THRESHOLD``) writes as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.db.dialect import copy_rows, set_aside_indexes
from cloudadmin.db.models.billing import AddendumCount, AddendumDay, AddendumTotal

# Index builds sort every entry; with the default 64 MB a million entries spill to disk.
INDEX_MEMORY = "256MB"
COUNTER_TABLES = tuple(m.__tablename__ for m in (AddendumCount, AddendumTotal, AddendumDay))
# Indexes the COPY keeps up instead of being built after it. The server stores rows while
# the loader checks the next ones, and the loader waited for it only 0.3 s of the 10-11 s of
# COPYing a million addendums (measured with a COPY per chunk, before the loader parsed
# with msgspec): the server has the time to keep up an index whose new entries
# go to one or a few places at its end, as these two do when the ids grow with the creation
# instants (an export's order). Inserting a million rows into a copy of the table with one
# index (0.7-0.8 s without one) cost 0.3-0.4 s more for (created_at, id) and 0.5-0.9 s
# more for reseller_id, each built in 0.6 s after a COPY. The others cost more kept than
# built: (product_id, status, id) 2.3 s against 1.1-1.6 s, (client_id, id) 2.2 s against
# 0.7-0.9 s, the folded names 1.2-1.4 s against 0.8-1.1 s; keeping all seven made the COPY
# 8.3 s longer (the loader waited 9.1 s for the server) for 5.9 s of builds saved. An index
# renamed by a later migration is simply set aside again.
KEPT_INDEXES = frozenset(("ix_addendums_created_at_id", "ix_addendums_reseller_id"))


@dataclass
class BulkLoad:
    conn: AsyncConnection
    table: Table
    restore: list[str]
    # The counts of the COPYed rows (``finish`` stores them), kept as they go by.
    counter: bulk_counts.RowCounter | None = None

    @classmethod
    async def start(cls, conn: AsyncConnection, table: Table) -> BulkLoad | None:
        """A bulk load into ``table``, or None when it holds rows (they are upserted)."""
        if not await _empty(conn, table):
            return None
        await conn.execute(text(f'LOCK TABLE "{table.name}" IN ACCESS EXCLUSIVE MODE'))
        if not await _empty(conn, table):  # filled between the look and the lock
            return None
        await conn.execute(text(f'ALTER TABLE "{table.name}" DISABLE TRIGGER USER'))
        return cls(conn, table, await set_aside_indexes(conn, table, KEPT_INDEXES))

    async def copy(
        self, columns: Sequence[str], batches: Iterable[Sequence[tuple[Any, ...]]]
    ) -> None:
        """COPYs the rows of ``batches`` (tuples of ``columns``) as they come, in one
        COPY statement.

        The server stores the rows while the loader checks the next ones. A COPY per
        chunk of 5,000 addendums, each waited for before the next began, left the
        server idle 6 s and the loader 2.8 s of a 13.3 s phase (a million addendums):
        every chunk's end was a round trip, and each side waited for the other.
        """
        self.counter = bulk_counts.RowCounter(columns)
        await copy_rows(self.conn, self.table, columns, self._rows(batches))

    def _rows(self, batches: Iterable[Sequence[tuple[Any, ...]]]) -> Iterator[tuple[Any, ...]]:
        assert self.counter is not None
        for batch in batches:
            self.counter.add(batch)
            yield from batch

    async def finish(self) -> None:
        """Indexes, foreign keys, counters, triggers and statistics, in that order.

        The loader counted the rows as it COPYed them (``bulk_counts.RowCounter``); it
        orders the counter rows in a thread while the server builds the indexes, and
        stores them by COPY: the server no longer sorts the million rows for the
        counters' GROUP BYs (3.5-4.5 s)."""
        conn = self.conn
        assert self.counter is not None, "finish() after copy()"
        counting = asyncio.ensure_future(asyncio.to_thread(self.counter.rows))
        try:
            await conn.execute(text(f"SET LOCAL maintenance_work_mem = '{INDEX_MEMORY}'"))
            for statement in self.restore:
                await conn.execute(text(statement))
        finally:
            counted = await counting  # never left running, even when a build fails
        await bulk_counts.store_counts(conn, counted)
        await conn.execute(text(f'ALTER TABLE "{self.table.name}" ENABLE TRIGGER USER'))
        for name in (self.table.name, *COUNTER_TABLES):
            await conn.execute(text(f'ANALYZE "{name}"'))

    def close(self) -> None:
        """Removes the counter's temporary files; the load's owner calls it, however the
        load ended."""
        if self.counter is not None:
            self.counter.close()


async def _empty(conn: AsyncConnection, table: Table) -> bool:
    return (await conn.execute(select(1).select_from(table).limit(1))).first() is None
