"""Emptying the test database between tests. PostgreSQL's TRUNCATE of every table cost
most of a simple test's time (it replaces each table's files); DELETE of tables that are
almost always empty costs next to nothing, so each test sends one batch of DELETEs."""

from __future__ import annotations

from sqlalchemy import text

import cloudadmin.db.models  # noqa: F401  (every table in Base.metadata)
from cloudadmin.config import Settings
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine

# Tables whose rows come from migrations and survive between tests.
SEEDED = {"groups"}
# Children before parents; the foreign keys are deferred to the commit anyway.
TABLES = [t.name for t in reversed(Base.metadata.sorted_tables) if t.name not in SEEDED]
# addendums keeps addendum_counts/addendum_totals by row triggers, so deleting a large
# batch of addendums would run them per row; its TRUNCATE trigger resets the counters at
# once, and no table refers to addendums, so it is truncated alone when it has rows.
TRUNCATED_WHEN_FILLED = "addendums"

# One round trip, one transaction (the simple query protocol runs a multi-statement
# string as one): the DELETEs, then the sequences some test advanced back to their start,
# as TRUNCATE ... RESTART IDENTITY did.
POSTGRES_BATCH = ";\n".join(
    [
        f"DO $$ BEGIN IF EXISTS (SELECT FROM {TRUNCATED_WHEN_FILLED}) THEN "
        f"TRUNCATE {TRUNCATED_WHEN_FILLED}; END IF; END $$",
        *(f"DELETE FROM {name}" for name in TABLES if name != TRUNCATED_WHEN_FILLED),
        "SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false) "
        "FROM pg_sequences WHERE last_value IS NOT NULL",
    ]
)


async def empty_all_tables(url: str, settings: Settings) -> None:
    if url.startswith("postgresql"):
        import asyncpg

        conn = await asyncpg.connect(url.replace("+asyncpg", ""))
        try:
            await conn.execute(POSTGRES_BATCH)
        finally:
            await conn.close()
        return
    engine = create_engine(settings, url)
    async with engine.begin() as conn:
        await conn.execute(text("PRAGMA defer_foreign_keys=ON"))
        for name in TABLES:
            await conn.execute(text(f"DELETE FROM {name}"))
    await engine.dispose()
