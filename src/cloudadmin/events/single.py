"""One dispatcher where one is enough: the lock a dispatcher holds while it runs.

- SQLite: one dispatcher per database file, whatever started it (a file lock beside
  the database; SQLite has one writer at a time, more dispatchers would only wait).
- PostgreSQL: the dispatchers inside `cloudadmin serve --workers N` take a
  session-level advisory lock, so one of the N processes dispatches and the others
  stand by; `cloudadmin worker` processes take no lock and share the work under
  ``FOR UPDATE SKIP LOCKED`` (events/outbox.py).

A process standing by takes over when the holder ends: the operating system drops a
dead process's file lock, PostgreSQL a dead connection's advisory lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
from pathlib import Path
from typing import IO, Any

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.db.dialect import asyncpg_connect_args

log = logging.getLogger("cloudadmin.dispatcher")

# pg_advisory_lock's key for "the dispatcher of `serve`" (any 64-bit number that no
# other lock of this database uses).
ADVISORY_KEY = 0x636C6F7564_0001
RETRY_SECONDS = 5.0


class DispatcherLock:
    """``await acquire(stop)`` until this process may dispatch; ``lost`` is set should
    it lose the lock (the PostgreSQL connection that holds it broke); ``release()``."""

    def __init__(
        self, engine: AsyncEngine, *, exclusive: bool, retry_seconds: float = RETRY_SECONDS
    ) -> None:
        self.dialect = engine.dialect.name
        self.url = engine.url.render_as_string(hide_password=False)
        self.exclusive = exclusive
        # How often a process standing by tries the lock again.
        self.retry_seconds = retry_seconds
        self.lost = asyncio.Event()
        self._file: IO[str] | None = None
        self._conn: Any = None
        self._warned = False  # one line per outage, not one per attempt
        self.refusals = 0  # times a try did not get the lock (tests read it)

    @property
    def needed(self) -> bool:
        if self.dialect == "sqlite":
            return (make_url(self.url).database or ":memory:") != ":memory:"
        return self.dialect == "postgresql" and self.exclusive

    async def acquire(self, stop: asyncio.Event, worker_id: str) -> bool:
        """True once held (at once when no lock is needed); False when stopped first."""
        self.lost.clear()
        if not self.needed:
            return True
        announced = False
        while not stop.is_set():
            if await (self._try_file() if self.dialect == "sqlite" else self._try_advisory()):
                return True
            self.refusals += 1
            if not announced:
                log.info("dispatcher %s standing by: another process dispatches", worker_id)
                announced = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.retry_seconds)
        return False

    async def _try_file(self) -> bool:
        if self._file is None:
            database = make_url(self.url).database
            self._file = Path(f"{database}.dispatcher.lock").open("a")  # noqa: ASYNC230, SIM115
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    async def _try_advisory(self) -> bool:
        """pg_try_advisory_lock on a connection of its own, kept open while held."""
        import asyncpg

        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncpg.connect(**asyncpg_connect_args(self.url), timeout=10)
            if not await self._conn.fetchval("SELECT pg_try_advisory_lock($1)", ADVISORY_KEY):
                return False
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            if not self._warned:
                log.warning("dispatcher lock: database unreachable (%s); trying again", exc)
                self._warned = True
            await self._close_conn()
            return False
        self._conn.add_termination_listener(lambda _conn: self.lost.set())
        self._warned = False
        return True

    async def release(self) -> None:
        if self._file is not None:
            self._file.close()  # drops the flock
            self._file = None
        await self._close_conn()

    async def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)  # ends the session: lock released
