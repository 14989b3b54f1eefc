"""Emptying the test database between tests. PostgreSQL's TRUNCATE of every table cost
most of a simple test's time (it replaces each table's files); DELETE of tables that are
almost always empty costs next to nothing, so each test sends one batch of DELETEs.

Opening the connection cost more than the batch: SQLite's batch goes through the
standard library's sqlite3 (no engine and no thread hop per statement, ~3 ms rather than
~25), PostgreSQL's through one connection kept for the session on an event loop of its
own (a test's loop ends with the test), opened again when it was closed under it (a test
that kills the database's connections)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import Any

from sqlalchemy.engine import make_url

import cloudadmin.db.models  # noqa: F401  (every table in Base.metadata)
from cloudadmin.db.base import Base

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


# One script, one transaction, the foreign keys on and checked at its commit, as on the
# service's connections (db/engine.py).
SQLITE_SCRIPT = "\n".join(
    [
        "PRAGMA foreign_keys=ON;",
        "PRAGMA synchronous=NORMAL;",
        "BEGIN IMMEDIATE;",
        "PRAGMA defer_foreign_keys=ON;",
        *(f"DELETE FROM {name};" for name in TABLES),
        "COMMIT;",
    ]
)


class _Postgres:
    """asyncpg connections kept for the session, per database URL, on a loop of their own."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: dict[str, Any] = {}
        self.lock = threading.Lock()

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self.loop.run_forever, name="test-cleaning", daemon=True
                ).start()
            return self.loop

    async def _empty(self, url: str) -> None:
        import asyncpg

        for attempt in (1, 2):
            conn = self.connections.get(url)
            if conn is None or conn.is_closed():
                conn = self.connections[url] = await asyncpg.connect(url.replace("+asyncpg", ""))
            try:
                await conn.execute(POSTGRES_BATCH)
                return
            except (
                asyncpg.PostgresConnectionError,
                asyncpg.AdminShutdownError,
                asyncpg.InterfaceError,
                OSError,
            ):
                # Its backend was terminated under it: once more on a new connection.
                self.connections.pop(url, None)
                if attempt == 2:
                    raise

    async def empty(self, url: str) -> None:
        future = asyncio.run_coroutine_threadsafe(self._empty(url), self._loop())
        await asyncio.wrap_future(future)


_postgres = _Postgres()


async def empty_all_tables(url: str) -> None:
    if url.startswith("postgresql"):
        await _postgres.empty(url)
        return
    conn = sqlite3.connect(make_url(url).database or "", timeout=30, isolation_level=None)
    try:
        conn.executescript(SQLITE_SCRIPT)
    finally:
        conn.close()
