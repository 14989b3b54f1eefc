"""access.md, "Throttling": when Redis, which keeps the throttles' counts, is down or
stalls, each check waits at most CLOUDADMIN_REDIS_TIMEOUT_MS and then passes uncounted
(the throttle fails open); Redis is asked again after a pause rather than on every
request; one warning is logged per interval, and every check passed uncounted is counted
in /metrics. When Redis answers again, counting resumes."""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from cloudadmin.app import create_app
from cloudadmin.auth.throttle import RETRY_SECONDS, Throttle
from cloudadmin.config import Settings
from cloudadmin.errors import Throttled
from cloudadmin.web.app_state import app_state
from tests.databases import redis_url
from tests.factories import auth, make_client, make_key, make_reseller, make_user
from tests.scrape import scrape
from tests.servers import free_port

TIMEOUT_MS = 50
UNCHECKED = "cloudadmin_throttle_unchecked_total"
ADDRESS = "198.51.100.66"


class StalledRedis:
    """A TCP server where Redis should be: it accepts connections and reads what is sent,
    and answers nothing (a paused or overloaded Redis) until ``forward_to`` is set; then
    new connections are passed through to that address."""

    def __init__(self) -> None:
        self.accepted = 0
        self.forward_to: tuple[str, int] | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"redis://127.0.0.1:{port}/0"

    async def __aenter__(self) -> StalledRedis:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self.forward_to is None:
                while await reader.read(65536):  # until the client gives up
                    pass
                return
            up_reader, up_writer = await asyncio.open_connection(*self.forward_to)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            writer.close()
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


def request_from(address: str) -> Request:
    return Request({"type": "http", "client": (address, 40000), "headers": []})


def counted() -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(UNCHECKED) or 0.0


async def timed(check: Awaitable[Any]) -> float:
    start = time.perf_counter()
    await check
    return time.perf_counter() - start


async def every_check(throttle: Throttle, rounds: int) -> list[float]:
    """Each kind of check ``rounds`` times (admit, a failed authentication, a key's
    request), and how long each took."""
    durations: list[float] = []
    for _ in range(rounds):
        durations.append(await timed(throttle.admit(request_from(ADDRESS))))
        durations.append(await timed(throttle.failed(request_from(ADDRESS))))
        durations.append(await timed(throttle.count(7)))
    return durations


@asynccontextmanager
async def throttle_at(
    url: str, per_key: str = "1000/minute", **options: Any
) -> AsyncIterator[Throttle]:
    throttle = Throttle(
        failures="1000/minute",
        per_key=per_key,
        redis_url=url,
        key_prefix=f"test-{uuid.uuid4().hex}",
        redis_timeout=TIMEOUT_MS / 1000,
        **options,
    )
    try:
        yield throttle
    finally:
        await throttle.close()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "cloudadmin.throttle" and r.levelno >= logging.WARNING
    ]


class TestRedisDown:
    @pytest.mark.parametrize("redis", ["closed port", "stalled"])
    async def test_checks_pass_quickly_counted_with_one_warning(
        self, redis: str, caplog: pytest.LogCaptureFixture
    ):
        caplog.set_level(logging.INFO, logger="cloudadmin.throttle")
        before = counted()
        async with StalledRedis() as stalled:
            url = stalled.url if redis == "stalled" else f"redis://127.0.0.1:{free_port()}/0"
            # Asked again only after an hour: every check after the first passes unasked.
            async with throttle_at(url, retry_seconds=3600) as throttle:
                durations = await every_check(throttle, rounds=40)
        checks = len(durations)
        # One check waits out the timeout, the others none of it: the typical check is
        # far under the timeout (each waited 0.5 s before), and even the slowest is far
        # under a second. Bounds loose, not a race with a busy machine.
        typical, slowest = statistics.median(durations), max(durations)
        assert typical < TIMEOUT_MS / 1000, f"typical check {typical:.3f} s"
        assert slowest < 40 * TIMEOUT_MS / 1000, f"slowest check {slowest:.3f} s"
        # Redis was tried once, not once per check (a stalled one holds each try for
        # the whole timeout).
        if redis == "stalled":
            assert stalled.accepted == 1, f"{stalled.accepted} connections for {checks} checks"
        assert counted() - before == checks
        warned = warnings_of(caplog)
        assert len(warned) == 1, warned
        assert "uncounted" in warned[0]

    async def test_redis_is_tried_again_and_counting_resumes(
        self, caplog: pytest.LogCaptureFixture
    ):
        caplog.set_level(logging.INFO, logger="cloudadmin.throttle")
        real = urlsplit(redis_url())
        async with StalledRedis() as stalled:
            options = {"retry_seconds": 0.05, "warn_interval": 3600}
            async with throttle_at(stalled.url, per_key="3/minute", **options) as throttle:
                before = counted()
                await throttle.count(41)  # Redis stalls: passes uncounted
                assert counted() - before == 1
                stalled.forward_to = (real.hostname or "127.0.0.1", real.port or 6379)
                await poll(lambda: caplog_has(caplog, "answers again"), throttle)
                # Counting in Redis again: a fresh key has its three, then 429.
                for _ in range(3):
                    await throttle.count(42)
                with pytest.raises(Throttled):
                    await throttle.count(42)
        assert len(warnings_of(caplog)) == 1


def caplog_has(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in r.getMessage() for r in caplog.records if r.name == "cloudadmin.throttle")


async def poll(condition: Callable[[], bool], throttle: Throttle, deadline: float = 30) -> None:
    """Checks (an address's failures) until ``condition`` holds."""
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "Redis was not asked again within the deadline"
        await throttle.admit(request_from(ADDRESS))
        await asyncio.sleep(0.01)


class TestServiceWithRedisStalled:
    async def test_requests_answer_and_metrics_count_the_unchecked(
        self,
        app: FastAPI,
        settings: Settings,
        session: AsyncSession,
        caplog: pytest.LogCaptureFixture,
    ):
        account = await make_client(session, reseller_id=(await make_reseller(session)).id)
        token = await make_key(session, await make_user(session, account))
        await session.commit()
        caplog.set_level(logging.INFO, logger="cloudadmin.throttle")
        async with StalledRedis() as stalled:
            service = create_app(
                settings.model_copy(
                    update={
                        "redis_url": stalled.url,
                        "redis_timeout_ms": TIMEOUT_MS,
                        "key_rate_limit": "1000/minute",
                    }
                )
            )
            transport = httpx.ASGITransport(app=service, client=(ADDRESS, 40000))
            try:
                async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                    before = (await scrape(c)).get(UNCHECKED)
                    start = time.monotonic()
                    for _ in range(20):
                        r = await c.get("/cloud/v1/users", headers=auth(token))
                        assert r.status_code == 200, r.text
                    elapsed = time.monotonic() - start
                    after = (await scrape(c)).get(UNCHECKED)
            finally:
                await app_state(service).throttle.close()
                await app_state(service).engine.dispose()
        # Three checks a request (its address's failures and its key's rate before the
        # database, its key's hit after), each passed uncounted; Redis was tried once
        # per RETRY_SECONDS at most, not once per check.
        assert after - before == 20 * 3
        assert stalled.accepted <= 1 + elapsed / RETRY_SECONDS, (stalled.accepted, elapsed)
        assert len(warnings_of(caplog)) == 1
