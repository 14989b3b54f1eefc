"""Engine creation; the one place that knows SQLite from PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from cloudadmin.config import Settings


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
    url = url or settings.effective_database_url
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
    kwargs.update(pool_size=settings.db_pool_size, max_overflow=settings.db_pool_size,
                  pool_pre_ping=True)
    return create_async_engine(url, **kwargs)


def _sqlite_autocommit_off(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker:  # type: ignore[type-arg]
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=True)
