"""Streaming the database out as one landscape document.

Each table is read in primary-key order through a server-side cursor (PostgreSQL) or
a stepping cursor (SQLite), ``CHUNK`` rows at a time, and each chunk is written
before the next is read: memory does not grow with the number of rows. The output
is deterministic (keys sorted, rows by primary key, one record per line), so an
export, loaded into an empty database and exported again, gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cloudadmin.db import models as m
from cloudadmin.db.base import table_of
from cloudadmin.db.engine import autocommit_engine, is_sqlite_url
from cloudadmin.exporter import records as rec
from cloudadmin.importer.loader import LoadReport
from cloudadmin.importer.progress import NO_PROGRESS, PhaseProgress

# Rows per fetch and per write: large enough to amortise a round trip, small enough
# that a chunk of addendums stays a few megabytes.
CHUNK = 2_000
# Below SQLite's historical limit of 999 bound parameters per statement.
IN_CHUNK = 900

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Source:
    key: str  # the document's top-level key
    table: Table
    to_record: Callable[[Any], rec.Record]


# The loader's order (importer/kinds.py), so that a reader sees accounts first.
SOURCES: tuple[Source, ...] = (
    Source("clients", table_of(m.Client), rec.client_record),
    Source("users", table_of(m.User), lambda row: rec.user_record(row, [])),
    Source("api_keys", table_of(m.ApiKey), rec.api_key_record),
    Source("sellers", table_of(m.Seller), rec.seller_record),
    Source("branding", table_of(m.Branding), rec.branding_record),
    Source("notification_settings", table_of(m.NotificationSetting),
           rec.notification_setting_record),
    Source("projects", table_of(m.Project), rec.project_record),
    Source("regions", table_of(m.Region), rec.region_record),
    Source("listeners", table_of(m.Listener), rec.listener_record),
    Source("lifecycle_policies", table_of(m.LifecyclePolicy), rec.lifecycle_policy_record),
    Source("addendums", table_of(m.Addendum), rec.addendum_record),
    Source("amqp_subscriptions", table_of(m.AmqpSubscription), rec.amqp_subscription_record),
    Source("prices", table_of(m.PriceCatalogue), rec.price_record),
)  # fmt: skip


@dataclass(frozen=True)
class ExportReport(LoadReport):
    """How many records of each top-level key were written."""

    done: ClassVar[str] = "exported"


@asynccontextmanager
async def snapshot(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A read-only connection that sees one state of the database throughout.

    PostgreSQL: a REPEATABLE READ, READ ONLY transaction. SQLite: a deferred BEGIN
    (the engine's own BEGIN IMMEDIATE would block every writer for the whole export);
    in WAL mode its first read fixes the snapshot.
    """
    if is_sqlite_url(str(engine.url)):
        async with autocommit_engine(engine).connect() as conn:
            await conn.exec_driver_sql("BEGIN")
            yield conn
        return
    async with engine.connect() as conn:
        conn = await conn.execution_options(
            isolation_level="REPEATABLE READ", postgresql_readonly=True
        )
        async with conn.begin():
            yield conn


async def _groups_of(conn: AsyncConnection, user_ids: Sequence[int]) -> dict[int, list[int]]:
    table = m.user_groups
    found: dict[int, list[int]] = {}
    for start in range(0, len(user_ids), IN_CHUNK):
        batch = user_ids[start : start + IN_CHUNK]
        rows = await conn.execute(
            select(table.c.user_id, table.c.group_id)
            .where(table.c.user_id.in_(batch))
            .order_by(table.c.user_id, table.c.group_id)
        )
        for user_id, group_id in rows:
            found.setdefault(user_id, []).append(group_id)
    return found


async def _records(conn: AsyncConnection, source: Source) -> AsyncIterator[list[rec.Record]]:
    table = source.table
    stmt = select(table).order_by(*table.primary_key.columns)
    result = await conn.stream(stmt.execution_options(yield_per=CHUNK))
    async for partition in result.mappings().partitions(CHUNK):
        if source.key == "users":
            groups = await _groups_of(conn, [row["id"] for row in partition])
            yield [rec.user_record(row, groups.get(row["id"], [])) for row in partition]
        else:
            yield [source.to_record(row) for row in partition]


async def count_rows(conn: AsyncConnection) -> int:
    total = 0
    for source in SOURCES:
        total += (await conn.execute(select(func.count()).select_from(source.table))).scalar_one()
    return total


async def export_document(
    conn: AsyncConnection,
    write: Callable[[str], Any],
    progress: PhaseProgress = NO_PROGRESS,
) -> ExportReport:
    """Write every record of the landscape tables to ``write``, chunk by chunk."""
    if progress is not NO_PROGRESS:
        progress.phase("exporting", await count_rows(conn))
    counts: dict[str, int] = {}
    write("{")
    for index, source in enumerate(SOURCES):
        write(f'{"," if index else ""}\n"{source.key}":[')
        written = 0
        async for records in _records(conn, source):
            lines = [_ENCODER.encode(record) for record in records]
            write(("," if written else "") + "\n" + ",\n".join(lines))
            written += len(records)
            progress.advance(len(records))
        write("\n]" if written else "]")
        counts[source.key] = written
    write("\n}\n")
    return ExportReport(counts)
