"""Shared fixtures: each test runs on SQLite and on PostgreSQL, on a migrated schema
that is emptied between tests, through the real ASGI app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine
from cloudadmin.db.migrate import upgrade
from cloudadmin.web.app_state import app_state
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url

# Fails a test that made db/driver.py fall back to SQLAlchemy unexpectedly.
pytest_plugins = ["tests.driver_guard"]

# Tables whose rows come from migrations and survive between tests.
SEEDED = {"groups"}
# The local RabbitMQ and aiosmtpd are on loopback, which the service refuses by default.
OUTBOUND_ALLOW = ["127.0.0.0/8", "::1"]


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated, empty database per backend for the whole session."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "test.db"
        url = f"sqlite+aiosqlite:///{path}"
        upgrade(url)
        yield url
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    url = asyncio.run(create_pg_database(base))
    try:
        upgrade(url)
        yield url
    finally:
        asyncio.run(drop_pg_database(base, url))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        secret_key="test-secret-key",
        data_dir=tmp_path / "data",
        outbound_allow=OUTBOUND_ALLOW,
    )


@pytest.fixture
def dialect(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


async def _empty_all_tables(url: str, settings: Settings) -> None:
    engine = create_engine(settings, url)
    tables = [t.name for t in reversed(Base.metadata.sorted_tables) if t.name not in SEEDED]
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            await conn.execute(text("PRAGMA defer_foreign_keys=ON"))
            for name in tables:
                await conn.execute(text(f"DELETE FROM {name}"))
    await engine.dispose()


@pytest.fixture
async def app(settings: Settings, database_url: str) -> AsyncIterator[object]:
    await _empty_all_tables(database_url, settings)
    application = create_app(settings)
    yield application
    await app_state(application).engine.dispose()


@pytest.fixture
async def client(app: object) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
async def session(app: object) -> AsyncIterator[AsyncSession]:
    """A session for arranging data; commit explicitly."""
    async with app_state(app).sessionmaker() as s:  # type: ignore[arg-type]
        yield s
