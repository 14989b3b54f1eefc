"""Test databases: SQLite always, PostgreSQL when one answers (required under CI=true)."""

from __future__ import annotations

import os
import socket
import uuid
from urllib.parse import urlsplit

import pytest

DEFAULT_PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def postgres_base_url() -> str | None:
    """The admin URL to create test databases from, or None when PostgreSQL is absent."""
    url = os.environ.get("CLOUDADMIN_TEST_POSTGRES_URL", "")
    candidate = url or DEFAULT_PG
    parts = urlsplit(candidate.replace("+asyncpg", ""))
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), 1):
            return candidate
    except OSError:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"PostgreSQL is required under CI=true but {parts.hostname}:{parts.port} "
                "does not answer",
                pytrace=False,
            )
        return None


def with_database(url: str, name: str) -> str:
    head, _, _ = url.rpartition("/")
    return f"{head}/{name}"


async def create_pg_database(base_url: str) -> str:
    import asyncpg

    name = f"cloudadmin_test_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(base_url.replace("+asyncpg", ""))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        # A test's commit need not wait for the WAL to reach the disk (2-3 ms a commit
        # here, 0.5 without): a test database never outlives a crash of the server. The
        # service's own databases keep PostgreSQL's default.
        await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    finally:
        await conn.close()
    return with_database(base_url, name)


async def drop_pg_database(base_url: str, url: str) -> None:
    import asyncpg

    name = url.rpartition("/")[2]
    conn = await asyncpg.connect(base_url.replace("+asyncpg", ""))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def redis_url() -> str:
    """The Redis of the limiters' tests: skipped when absent, required under CI=true."""
    url = os.environ.get("CLOUDADMIN_TEST_REDIS_URL", "") or DEFAULT_REDIS
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 1):
            return url
    except OSError:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"Redis is required under CI=true but {parts.hostname}:{parts.port} "
                "does not answer",
                pytrace=False,
            )
        pytest.skip("Redis is not reachable (set CLOUDADMIN_TEST_REDIS_URL)")
