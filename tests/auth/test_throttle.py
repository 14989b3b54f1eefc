"""access.md, "Throttling": failed authentications per client address, and requests per
API key, counted in memory or in Redis, and refused with 429 before any database work."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.app_state import app_state
from tests.databases import redis_url
from tests.factories import auth, make_client, make_key, make_reseller, make_user
from tests.pool import Checkouts
from tests.servers import free_port

URL = "/cloud/v1/users"
ATTACKER = "198.51.100.66"
BYSTANDER = "198.51.100.77"

MakeApp = Callable[..., FastAPI]


@pytest.fixture(params=["memory", "redis"])
def limits_storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings of the limiters' storage; Redis keys under a prefix of this test's own."""
    if request.param == "memory":
        return {"redis_url": None}
    # These tests show what is counted, not how long Redis may take: on a busy machine a
    # round trip can exceed the production bound (50 ms), and the check would pass
    # uncounted. The bound itself: tests/auth/test_throttle_redis_down.py.
    return {
        "redis_url": redis_url(),
        "limits_key_prefix": f"test-{uuid.uuid4().hex}",
        "redis_timeout_ms": 2000,
    }


@pytest.fixture
async def make_app(
    app: FastAPI, settings: Settings, limits_storage: dict[str, Any]
) -> AsyncIterator[MakeApp]:
    """Apps on the test database (emptied by `app`) with some settings changed.

    The limits are per minute, counted in a sliding window that weighs the last minute's
    hits less as the next one goes on: a test that crossed a minute's edge would see its
    limit move. So each starts with at least 20 s of its minute left."""
    left = 60 - time.time() % 60
    if left < 20:
        await asyncio.sleep(left)
    made: list[FastAPI] = []

    def make(**changed: Any) -> FastAPI:
        made.append(create_app(settings.model_copy(update={**limits_storage, **changed})))
        return made[-1]

    yield make
    for application in made:
        await app_state(application).throttle.close()
        await app_state(application).engine.dispose()


@asynccontextmanager
async def client_at(app: FastAPI, address: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def new_key(session: AsyncSession) -> str:
    account = await make_client(session, reseller_id=(await make_reseller(session)).id)
    token = await make_key(session, await make_user(session, account))
    await session.commit()
    return token


def wrong(token: str) -> dict[str, str]:
    return {"Authorization": f"apikey {token.split('_')[0]}_wrong-secret"}


def assert_429(r: httpx.Response, window_seconds: int) -> None:
    assert r.status_code == 429, r.text
    assert r.json()["exception_class"] == "Throttled"
    assert 1 <= int(r.headers["retry-after"]) <= window_seconds


class TestFailedAuthenticationsPerAddress:
    async def test_past_the_limit_the_address_answers_429_with_retry_after(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(auth_failure_limit="3/minute")
        async with client_at(app, ATTACKER) as attacker:
            for _ in range(3):
                assert (await attacker.get(URL, headers=wrong(token))).status_code == 401
            assert_429(await attacker.get(URL, headers=wrong(token)), 60)
            # Every attempt from there, a valid key's too: nothing tells which is which
            # without the database.
            assert_429(await attacker.get(URL, headers=auth(token)), 60)

    async def test_unknown_ids_and_malformed_keys_count_too(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(auth_failure_limit="2/minute")
        async with client_at(app, ATTACKER) as attacker:
            r = await attacker.get(URL, headers={"Authorization": "apikey 424242_x"})
            assert r.status_code == 401
            r = await attacker.get(URL, headers={"Authorization": "apikey garbage"})
            assert r.status_code == 401
            assert_429(await attacker.get(URL, headers=auth(token)), 60)

    async def test_a_throttled_attempt_does_no_database_work(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(auth_failure_limit="2/minute")
        checkouts = Checkouts(app_state(app).engine)
        async with client_at(app, ATTACKER) as attacker:
            for _ in range(2):
                await attacker.get(URL, headers=wrong(token))
            checkouts.start()
            assert_429(await attacker.get(URL, headers=wrong(token)), 60)
            assert_429(
                await attacker.post(
                    "/iam/admin/sellers", headers=wrong(token), json={"email": "x@example.com"}
                ),
                60,
            )
        assert checkouts.total == 0

    async def test_a_valid_key_from_another_address_is_served(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(auth_failure_limit="3/minute")
        async with client_at(app, ATTACKER) as attacker, client_at(app, BYSTANDER) as other:
            for _ in range(5):
                await attacker.get(URL, headers=wrong(token))
            assert_429(await attacker.get(URL, headers=wrong(token)), 60)
            r = await other.get(URL, headers=auth(token))
            assert r.status_code == 200, r.text

    async def test_successes_and_missing_credentials_do_not_count(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(auth_failure_limit="2/minute")
        async with client_at(app, ATTACKER) as caller:
            for _ in range(4):
                assert (await caller.get(URL, headers=auth(token))).status_code == 200
                assert (await caller.get(URL)).status_code == 401  # no header at all
            assert (await caller.get(URL, headers=wrong(token))).status_code == 401


class TestSharedAcrossProcesses:
    async def test_processes_sharing_redis_count_failures_together(
        self, make_app: MakeApp, session: AsyncSession, limits_storage: dict[str, Any]
    ):
        if limits_storage["redis_url"] is None:
            pytest.skip("in process memory, each process counts for itself")
        token = await new_key(session)
        first, second = (make_app(auth_failure_limit="3/minute") for _ in range(2))
        async with client_at(first, ATTACKER) as one, client_at(second, ATTACKER) as two:
            for _ in range(3):
                assert (await one.get(URL, headers=wrong(token))).status_code == 401
            assert_429(await two.get(URL, headers=wrong(token)), 60)


class TestRequestsPerKey:
    async def test_past_the_rate_the_key_answers_429_with_retry_after(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token, other = await new_key(session), await new_key(session)
        app = make_app(key_rate_limit="2/minute")
        checkouts = Checkouts(app_state(app).engine)
        async with client_at(app, BYSTANDER) as caller:
            for _ in range(2):
                assert (await caller.get(URL, headers=auth(token))).status_code == 200
            checkouts.start()
            assert_429(await caller.get(URL, headers=auth(token)), 60)
            assert checkouts.total == 0  # refused before any database work
            assert (await caller.get(URL, headers=auth(other))).status_code == 200

    async def test_wrong_secrets_do_not_spend_the_keys_budget(
        self, make_app: MakeApp, session: AsyncSession
    ):
        token = await new_key(session)
        app = make_app(key_rate_limit="2/minute", auth_failure_limit="1000/minute")
        async with client_at(app, ATTACKER) as attacker, client_at(app, BYSTANDER) as owner:
            for _ in range(5):
                assert (await attacker.get(URL, headers=wrong(token))).status_code == 401
            for _ in range(2):
                assert (await owner.get(URL, headers=auth(token))).status_code == 200

    async def test_off_by_default(self, make_app: MakeApp, session: AsyncSession):
        token = await new_key(session)
        app = make_app()
        async with client_at(app, BYSTANDER) as caller:
            for _ in range(30):
                assert (await caller.get(URL, headers=auth(token))).status_code == 200


class TestRedisUnreachable:
    async def test_requests_pass_when_the_counts_cannot_be_kept(
        self, app: FastAPI, settings: Settings, session: AsyncSession
    ):
        # The throttle protects the service; it must not be why everyone is refused.
        token = await new_key(session)
        nobody = create_app(
            settings.model_copy(
                update={
                    "redis_url": f"redis://127.0.0.1:{free_port()}/0",
                    "auth_failure_limit": "1/minute",
                    "key_rate_limit": "1/minute",
                }
            )
        )
        try:
            async with client_at(nobody, ATTACKER) as caller:
                for _ in range(3):
                    assert (await caller.get(URL, headers=wrong(token))).status_code == 401
                    assert (await caller.get(URL, headers=auth(token))).status_code == 200
        finally:
            await app_state(nobody).throttle.close()
            await app_state(nobody).engine.dispose()
