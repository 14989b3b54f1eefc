"""Shared fixtures: each test runs on SQLite and on PostgreSQL, on a migrated schema
that is emptied between tests, through the real ASGI app."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.migrate import upgrade
from cloudadmin.web.app_state import app_state
from tests.cleaning import empty_all_tables
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.routed_apps import kept_engine, routed_app

# Fails a test that made db/driver.py fall back to SQLAlchemy unexpectedly; schedules the
# tests over pytest-xdist workers.
pytest_plugins = ["tests.driver_guard", "tests.scheduling"]

# The local RabbitMQ and aiosmtpd are on loopback, which the service refuses by default.
OUTBOUND_ALLOW = ["127.0.0.0/8", "::1"]

# Cheap argon2id for the passwords tests write, in this process and every process a test
# starts (they inherit the environment): at the default cost (3 passes over 64 MiB) a
# hash takes 0.1 to 0.25 s here, and the suite writes hundreds. The cost itself is
# tested in tests/kit/test_password_hashing.py.
os.environ.setdefault("CLOUDADMIN_PASSWORD_HASH_TIME_COST", "1")
os.environ.setdefault("CLOUDADMIN_PASSWORD_HASH_MEMORY_KIB", "64")


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated, empty database per backend for the whole session (of each xdist
    worker: each creates its own PostgreSQL database and SQLite file)."""
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


# Settings() reads each of its fields from the environment (about 10 ms of a test);
# the environment does not change during a run, so each test gets a copy of the one made
# for its database, with its own data directory.
_settings_of: dict[str, Settings] = {}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    made = _settings_of.get(database_url)
    if made is None:
        made = _settings_of[database_url] = Settings(
            database_url=database_url,
            secret_key="test-secret-key",
            data_dir=tmp_path / "data",
            outbound_allow=OUTBOUND_ALLOW,
            # A read's log row is written with its request: tests read the table right
            # after. Rows written in batches: tests/iam/test_activity_log_batches.py.
            activity_log_read_batch_ms=0,
        )
    return made.model_copy(update={"data_dir": tmp_path / "data"}, deep=True)


@pytest.fixture
def dialect(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@pytest.fixture
async def app(settings: Settings, database_url: str) -> AsyncIterator[object]:
    await empty_all_tables(database_url)
    # The engine and its pooled connections are kept for the next test (tests/routed_apps.py).
    application = routed_app(create_app(settings, engine=kept_engine(settings)), settings)
    yield application


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
