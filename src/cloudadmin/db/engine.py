"""Engine creation; the one place that knows SQLite from PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Session

from cloudadmin.config import Settings, async_database_url


def is_sqlite_url(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_on_connect(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    # WAL lets readers run beside the one writer; busy_timeout waits instead of failing.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def create_engine(settings: Settings, url: str | None = None) -> AsyncEngine:
    # An explicit URL (migrations, tests) may be in a plain form too.
    url = async_database_url(url) if url else settings.effective_database_url
    kwargs: dict[str, Any] = {}
    if is_sqlite_url(url):
        path = make_url(url).database
        if path and path != ":memory:":
            from pathlib import Path

            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, **kwargs)
        event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
        # aiosqlite's default "deferred" BEGIN lets two writers deadlock on upgrade;
        # BEGIN IMMEDIATE takes the write lock up front and waits via busy_timeout.
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        # pysqlite's own transaction handling must be off for the BEGIN above.
        event.listen(engine.sync_engine, "connect", _sqlite_autocommit_off, insert=True)
        return engine
    # A fixed pool: requests beyond it wait their turn, first come first served.
    # Overflow connections were opened and closed under load, each with a cold
    # statement cache: multi-second stragglers at 64 concurrent requests.
    kwargs.update(
        pool_size=settings.db_pool_size,
        max_overflow=0,
        pool_timeout=settings.db_pool_timeout,
        pool_pre_ping=settings.db_pre_ping,
    )
    return create_async_engine(url, **kwargs)


def _sqlite_autocommit_off(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn: Any) -> None:
    if conn.get_execution_options().get(_AUTOCOMMIT):
        return  # each statement is its own transaction (see autocommit_engine)
    conn.exec_driver_sql("BEGIN IMMEDIATE")


_AUTOCOMMIT = "cloudadmin_autocommit"


def autocommit_engine(engine: AsyncEngine) -> AsyncEngine:
    """The same engine and pool, with every statement committed on its own: no BEGIN
    and no COMMIT round trips, and on SQLite no write lock held while reading.

    PostgreSQL: the driver's AUTOCOMMIT (a flag of the connection, no statement).
    SQLite: the driver already runs in autocommit mode for our own BEGIN IMMEDIATE
    (``_sqlite_autocommit_off``); this option only skips that BEGIN.
    """
    if is_sqlite_url(str(engine.url)):
        return engine.execution_options(**{_AUTOCOMMIT: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def is_autocommit(conn: AsyncConnection | Connection) -> bool:
    """Whether ``conn`` runs each statement on its own (a connection of autocommit_engine)."""
    sync = conn.sync_connection if isinstance(conn, AsyncConnection) else conn
    options = sync.get_execution_options() if sync is not None else {}
    return bool(options.get(_AUTOCOMMIT) or options.get("isolation_level") == "AUTOCOMMIT")


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=True)


class _ReadOnlySession(Session):
    """A session that refuses to flush changes: it has no transaction to make them
    atomic, so a change would be a bug of the handler (answered 500, never half-done)."""

    def flush(self, objects: Any = None) -> None:
        if self.new or self.dirty or self.deleted:
            raise RuntimeError("a read-only request tried to change the database")
        super().flush(objects)


def create_read_sessionmaker(read_engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions for requests that only read (GET), on ``read_engine`` (an
    autocommit_engine): their statements run without an explicit transaction. Under
    READ COMMITTED each statement of a transaction sees the data committed when it
    starts anyway, so reads lose nothing; the request's activity-log row is then one
    INSERT committed on its own."""
    return async_sessionmaker(
        read_engine, expire_on_commit=False, autoflush=False, sync_session_class=_ReadOnlySession
    )
