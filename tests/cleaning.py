"""Emptying the test database between tests. PostgreSQL's TRUNCATE of every table cost
most of a simple test's time (it replaces each table's files); DELETE of tables that are
almost always empty costs next to nothing, so each test sends one batch of DELETEs.

Opening the connection cost more than the batch: SQLite's batch goes through the
standard library's sqlite3 (no engine and no thread hop per statement, ~3 ms rather than
~25) on a connection kept for the session, PostgreSQL's through one connection kept for
the session on an event loop of its own (it serves every loop a test may run on), opened again
when it was closed under it (a test that kills the database's connections)."""

from __future__ import annotations

import asyncio
import atexit
import os
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
    _sqlite_connection(make_url(url).database or "").executescript(SQLITE_SCRIPT)


# One connection kept per SQLite file for the session (and opened again when the file at
# that path is a new one). Closed after each test, it was the file's last connection
# when the test's engine had let go of its own, so its close checkpointed the WAL into
# the file and synced it: some milliseconds a test, most of the cleaning's cost. Kept
# open, the WAL is checkpointed when it grows (every 1,000 pages), as in the service.
_sqlite: dict[str, tuple[tuple[int, int], sqlite3.Connection]] = {}


@atexit.register
def _close_sqlite() -> None:
    for _, conn in _sqlite.values():
        conn.close()


def _sqlite_connection(path: str) -> sqlite3.Connection:
    stat = os.stat(path)
    identity = (stat.st_dev, stat.st_ino)
    kept = _sqlite.get(path)
    if kept is not None and kept[0] == identity:
        return kept[1]
    if kept is not None:
        kept[1].close()
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    _sqlite[path] = (identity, conn)
    return conn
