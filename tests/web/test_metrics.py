"""GET /metrics: Prometheus text, no API key, per route template; authentication
failures, throttles and the database pool's gauges (docs/operations.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.web.app_state import app_state
from cloudadmin.web.turns import Turns
from tests.factories import Landscape, auth, landscape
from tests.scrape import scrape

REQUESTS = "cloudadmin_http_requests_total"
SECONDS = "cloudadmin_http_request_duration_seconds_count"
USER = "/iam/users/{userId}"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def other_app(settings: Settings, **changes: object) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings.model_copy(update=changes))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    await app_state(app).engine.dispose()


class TestExposition:
    async def test_answers_prometheus_text_without_an_api_key(self, client: httpx.AsyncClient):
        samples = await scrape(client)
        assert "# TYPE cloudadmin_http_requests_total counter" in samples.text
        assert "# TYPE cloudadmin_http_request_duration_seconds histogram" in samples.text
        assert samples.has("cloudadmin_db_pool_size")

    async def test_writes_no_activity_log_row(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        r = await client.get("/metrics", headers=auth(ls.reseller))
        assert r.status_code == 200
        count = await session.execute(select(func.count()).select_from(ActivityLogEntry))
        assert count.scalar_one() == 0

    async def test_is_not_in_the_openapi_document(self, client: httpx.AsyncClient):
        assert "/metrics" not in (await client.get("/openapi.json")).json()["paths"]

    async def test_turned_off_there_is_no_route(self, settings: Settings, app: FastAPI):
        async for c in other_app(settings, metrics_enabled=False):
            assert (await c.get("/metrics")).status_code == 404


class TestRequests:
    async def test_counted_by_route_template_method_and_status(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        before = await scrape(client)
        for user in (ls.admin_user, ls.member_user):
            r = await client.get(f"/iam/users/{user.id}", headers=auth(ls.client_admin))
            assert r.status_code == 200, r.text
        r = await client.get("/iam/users/999999", headers=auth(ls.client_admin))
        assert r.status_code == 404
        after = await scrape(client)
        ok = {"method": "GET", "route": USER, "status": "200"}
        assert after.get(REQUESTS, **ok) - before.get(REQUESTS, **ok) == 2
        assert after.get(SECONDS, **ok) - before.get(SECONDS, **ok) == 2
        missing = {"method": "GET", "route": USER, "status": "404"}
        assert after.get(REQUESTS, **missing) - before.get(REQUESTS, **missing) == 1
        routes = {labels["route"] for labels in after.labels_of(REQUESTS)}
        assert not any(route.startswith("/iam/users/") and "{" not in route for route in routes)

    async def test_a_path_no_route_matches_is_one_series(self, client: httpx.AsyncClient):
        before = await scrape(client)
        for path in ("/no/such/thing", "/nor/this/1", "/nor/this/2"):
            assert (await client.get(path)).status_code == 404
        after = await scrape(client)
        unmatched = {"method": "GET", "route": "unmatched", "status": "404"}
        assert after.get(REQUESTS, **unmatched) - before.get(REQUESTS, **unmatched) == 3
        assert "/nor/this" not in after.text

    async def test_an_unknown_method_is_one_label_value(self, client: httpx.AsyncClient):
        before = await scrape(client)
        await client.request("BREW", "/healthz")
        after = await scrape(client)
        other = {"method": "other", "route": "/healthz", "status": "405"}
        assert after.get(REQUESTS, **other) - before.get(REQUESTS, **other) == 1


class TestAuthentication:
    async def test_failed_authentications_are_counted(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        before = await scrape(client)
        for token in ("1_wrong", "999999_nobody", "malformed"):
            r = await client.get("/iam/users/1", headers=auth(token))
            assert r.status_code == 401
        after = await scrape(client)
        failures = "cloudadmin_auth_failures_total"
        assert after.get(failures) - before.get(failures) == 3

    async def test_throttled_requests_are_counted_by_limit(
        self, settings: Settings, app: FastAPI, ls: Landscape
    ):
        throttled = "cloudadmin_throttled_requests_total"
        async for c in other_app(
            settings, auth_failure_limit="2/minute", key_rate_limit="1/minute"
        ):
            before = await scrape(c)
            statuses = [
                (await c.get("/iam/users/1", headers=auth("1_wrong"))).status_code for _ in range(3)
            ]
            assert statuses == [401, 401, 429]
            statuses = [
                (
                    await c.get(f"/iam/users/{ls.admin_user.id}", headers=auth(ls.operator))
                ).status_code
                for _ in range(2)
            ]
            # The address is past its failures: refused before the key is looked at.
            assert statuses == [429, 429]
            after = await scrape(c)
            assert (
                after.get(throttled, limit="auth_failures")
                - before.get(throttled, limit="auth_failures")
                == 3
            )

    async def test_a_key_past_its_rate_is_counted(
        self, settings: Settings, app: FastAPI, ls: Landscape
    ):
        throttled = "cloudadmin_throttled_requests_total"
        async for c in other_app(settings, key_rate_limit="1/minute"):
            before = await scrape(c)
            statuses = [
                (
                    await c.get(f"/iam/users/{ls.admin_user.id}", headers=auth(ls.operator))
                ).status_code
                for _ in range(3)
            ]
            assert statuses == [200, 429, 429]
            after = await scrape(c)
            assert (
                after.get(throttled, limit="api_key") - before.get(throttled, limit="api_key") == 2
            )


def gauge(name: str) -> float:
    value = REGISTRY.get_sample_value(name)
    assert value is not None, name
    return value


class TestDatabasePool:
    async def test_connections_in_use_and_requests_waiting(self):
        turns = Turns(1, 30)
        in_use, waiting = (
            gauge("cloudadmin_db_pool_connections_in_use"),
            gauge("cloudadmin_db_pool_requests_waiting"),
        )
        release = asyncio.Event()

        async def hold() -> None:
            async with turns.turn():
                await release.wait()

        first = asyncio.create_task(hold())
        second = asyncio.create_task(hold())
        deadline = asyncio.get_running_loop().time() + 10
        while gauge("cloudadmin_db_pool_requests_waiting") - waiting < 1:
            assert asyncio.get_running_loop().time() < deadline, "the second never waited"
            await asyncio.sleep(0.01)
        assert gauge("cloudadmin_db_pool_connections_in_use") - in_use == 1
        release.set()
        await asyncio.gather(first, second)
        assert gauge("cloudadmin_db_pool_connections_in_use") == in_use
        assert gauge("cloudadmin_db_pool_requests_waiting") == waiting

    async def test_scraped_with_the_pool_size(self, client: httpx.AsyncClient, settings: Settings):
        samples = await scrape(client)
        assert samples.get("cloudadmin_db_pool_size") == settings.db_pool_size
        assert samples.has("cloudadmin_db_pool_connections_in_use")
        assert samples.has("cloudadmin_db_pool_requests_waiting")
