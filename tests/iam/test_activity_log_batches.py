"""Reads' activity-log rows written in batches (docs/activity-log.md, "Durability"):
on PostgreSQL a read's row waits in its process for up to
CLOUDADMIN_ACTIVITY_LOG_READ_BATCH_MS and is written with the others of that moment; a
change's row is still written with the change; SQLite writes every row with its request."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape

ADDENDUMS = "/billing/org/v1/addendums"
LOG = "/iam/activity_log/requests"
SELLERS = "/iam/admin/sellers"
# The longest wait allowed: longer than any of these tests needs to send its requests.
LONG = 1000


async def batched(settings: Settings, batch_ms: int) -> AsyncIterator[httpx.AsyncClient]:
    application = create_app(settings.model_copy(update={"activity_log_read_batch_ms": batch_ms}))
    transport = httpx.ASGITransport(app=application, client=("203.0.113.7", 40000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            c.app = application  # type: ignore[attr-defined]
            yield c
    finally:
        await app_state(application).request_log.close()
        await app_state(application).engine.dispose()


@pytest.fixture
async def ls(app: object, session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def client_long(settings: Settings, ls: Landscape) -> AsyncIterator[httpx.AsyncClient]:
    async for c in batched(settings, LONG):
        yield c


@pytest.fixture
async def client_short(settings: Settings, ls: Landscape) -> AsyncIterator[httpx.AsyncClient]:
    async for c in batched(settings, 20):
        yield c


async def rows(session: AsyncSession, path: str = ADDENDUMS) -> int:
    await session.rollback()  # a fresh snapshot
    found = await session.scalar(
        select(func.count()).select_from(ActivityLogEntry).where(ActivityLogEntry.path == path)
    )
    return int(found or 0)


async def wait_for_rows(session: AsyncSession, expected: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while (found := await rows(session)) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert found == expected, f"{found} of {expected} read rows written after {seconds} s"


async def reads(client: httpx.AsyncClient, token: str, n: int) -> None:
    answers = await asyncio.gather(*(client.get(ADDENDUMS, headers=auth(token)) for _ in range(n)))
    assert [r.status_code for r in answers] == [200] * n


class TestReadRows:
    async def test_are_written_together_in_fewer_transactions_than_reads(
        self, client_long: httpx.AsyncClient, ls: Landscape, session: AsyncSession, dialect: str
    ):
        await reads(client_long, ls.operator, 10)
        if dialect == "sqlite":
            assert await rows(session) == 10  # each with its request
            return
        await wait_for_rows(session, 10)
        # Rows inserted by one transaction share its id (xmin).
        transactions = await session.scalar(
            text("SELECT count(DISTINCT xmin::text) FROM activity_log WHERE path = :p"),
            {"p": ADDENDUMS},
        )
        assert transactions is not None and transactions < 10

    async def test_are_in_the_log_the_caller_reads_next(
        self, client_long: httpx.AsyncClient, ls: Landscape
    ):
        await reads(client_long, ls.operator, 3)
        r = await client_long.get(LOG, params={"path": ADDENDUMS}, headers=auth(ls.operator))
        assert r.status_code == 200, r.text
        assert r.json()["count"] == 3

    async def test_are_written_when_the_application_stops(
        self, client_long: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await reads(client_long, ls.operator, 4)
        await app_state(client_long.app).request_log.close()  # type: ignore[attr-defined]
        assert await rows(session) == 4

    async def test_the_database_refused_are_written_once_it_takes_them(
        self,
        client_short: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        database_url: str,
        dialect: str,
        caplog: pytest.LogCaptureFixture,
    ):
        if dialect == "sqlite":
            pytest.skip("SQLite writes each row with its request")
        admin = create_async_engine(database_url)
        try:
            async with admin.begin() as conn:
                await conn.execute(text("ALTER TABLE activity_log RENAME TO activity_log_away"))
            with caplog.at_level(logging.ERROR, logger="cloudadmin.activity_log"):
                await reads(client_short, ls.operator, 3)
                deadline = time.monotonic() + 60
                while "could not be written" not in caplog.text and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert "could not be written" in caplog.text, "no failed write was logged"
        finally:
            async with admin.begin() as conn:
                await conn.execute(text("ALTER TABLE activity_log_away RENAME TO activity_log"))
            await admin.dispose()
        await wait_for_rows(session, 3)


class TestChangeRows:
    async def test_are_written_with_the_change(
        self, client_long: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = {"email": "s@x.example", "full_name": "S"}
        r = await client_long.post(SELLERS, json=seller, headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        assert await rows(session, SELLERS) == 1
