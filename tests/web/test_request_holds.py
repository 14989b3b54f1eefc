"""What a request holds (web/route.py): one pooled connection at most, and neither a turn
nor a connection while its body arrives, which may take body_timeout_seconds (then 408)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry, FailedLoginNotice
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape
from tests.pool import Checkouts

SELLERS = "/iam/admin/sellers"
USERS = "/cloud/v1/users"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    found = await landscape(session)
    await session.close()  # hands its connection back: the pool holds only the request's
    return found


@pytest.fixture
def checkouts(app: FastAPI) -> Iterator[Checkouts]:
    watching = Checkouts(app_state(app).engine)
    yield watching
    watching.stop()


class TestOneConnectionPerRequest:
    async def test_a_wrong_secret_is_noticed_on_one_connection_at_a_time(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        checkouts: Checkouts,
        session: AsyncSession,
    ):
        key_id = ls.client_admin.split("_")[0]
        checkouts.start()
        r = await client.get(USERS, headers={"Authorization": f"apikey {key_id}_wrong"})
        assert r.status_code == 401
        assert checkouts.most_at_once == 1
        notice = await session.get(FailedLoginNotice, int(key_id))
        assert notice is not None  # the bookkeeping still happened

    async def test_a_failed_read_logs_its_reverted_row_on_its_own_connection(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        checkouts: Checkouts,
        session: AsyncSession,
    ):
        checkouts.start()
        r = await client.get(f"{SELLERS}/987654", headers=auth(ls.operator))
        assert r.status_code == 404
        assert checkouts.most_at_once == 1
        row = (await session.execute(select(ActivityLogEntry))).scalar_one()
        assert (row.status_code, row.reverted, row.method) == (404, True, "GET")

    async def test_a_failed_change_logs_its_reverted_row(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        checkouts: Checkouts,
        session: AsyncSession,
    ):
        checkouts.start()
        r = await client.patch(
            f"{SELLERS}/987654",
            headers=auth(ls.operator),
            json={"email": "a@example.com", "full_name": "A"},
        )
        assert r.status_code == 404
        assert checkouts.most_at_once == 1
        row = (await session.execute(select(ActivityLogEntry))).scalar_one()
        assert (row.status_code, row.reverted, row.method) == (404, True, "PATCH")


class Trickle:
    """A request body that sends its first bytes, then waits until let go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go_on = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"email": "slow@example.com", '
        self.started.set()
        await self.go_on.wait()
        yield b'"full_name": "Slow"}'


@pytest.fixture
async def make_app(app: FastAPI, settings: Settings) -> AsyncIterator[Callable[..., FastAPI]]:
    made: list[FastAPI] = []

    def make(**changed: Any) -> FastAPI:
        made.append(create_app(settings.model_copy(update=changed)))
        return made[-1]

    yield make
    for application in made:
        await app_state(application).engine.dispose()


def client_of(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


class TestSlowBodies:
    async def test_a_body_that_does_not_arrive_in_time_answers_408(
        self, make_app: Callable[..., FastAPI], ls: Landscape
    ):
        app = make_app(body_timeout_seconds=0.5)
        body = Trickle()
        async with client_of(app) as client:
            try:
                r = await asyncio.wait_for(
                    client.post(
                        SELLERS,
                        content=body,
                        headers={**auth(ls.reseller), "Content-Type": "application/json"},
                    ),
                    timeout=10,
                )
            finally:
                body.go_on.set()
        assert r.status_code == 408, r.text
        assert r.json()["exception_class"] == "RequestTimeout"
        assert r.headers["connection"] == "close"

    async def test_a_body_on_its_way_holds_no_turn(
        self, make_app: Callable[..., FastAPI], ls: Landscape
    ):
        # One turn, one connection: a body on its way would hold them all.
        app = make_app(db_pool_size=1, db_pool_timeout=5, body_timeout_seconds=30)
        body = Trickle()
        async with client_of(app) as client:
            slow = asyncio.create_task(
                client.post(
                    SELLERS,
                    content=body,
                    headers={**auth(ls.reseller), "Content-Type": "application/json"},
                )
            )
            try:
                await asyncio.wait_for(body.started.wait(), timeout=10)
                r = await asyncio.wait_for(client.get(USERS, headers=auth(ls.reseller)), timeout=3)
                assert r.status_code == 200, r.text
            finally:
                body.go_on.set()
            done = await asyncio.wait_for(slow, timeout=10)
        assert done.status_code == 200, done.text  # the slow body was served in the end


class TestDocumented:
    async def test_every_operation_may_answer_429_and_one_with_a_body_408(
        self, client: httpx.AsyncClient
    ):
        paths = (await client.get("/openapi.json")).json()["paths"]
        create, read = paths[SELLERS]["post"], paths[USERS]["get"]
        assert {"408", "429"} <= set(create["responses"])
        assert "429" in read["responses"] and "408" not in read["responses"]
        assert "429" not in paths["/healthz"]["get"]["responses"]
