"""A failing delivery is logged once a minute per subscription and reason, with the
repeats counted (events/failure_log.py)."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import DeliveryState
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.failure_log import FailureLog
from cloudadmin.web.app_state import app_state
from tests.events.helpers import make_subscription
from tests.events.sockets import closed_port
from tests.factories import Landscape, auth

SELLERS = "/iam/admin/sellers"
log = logging.getLogger("tests.failure_log")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


class TestFailureLog:
    def test_repeats_within_the_window_are_counted_then_summarised(
        self, caplog: pytest.LogCaptureFixture
    ):
        clock = Clock()
        failures = FailureLog(log, clock=clock)
        with caplog.at_level(logging.WARNING, logger=log.name):
            for _ in range(13):
                failures.warning(("amqp", 7), "refused", "sub %s failed: %s", 7, "refused")
                clock.now += 4  # 13 failures over 52 s
            assert lines(caplog, log.name) == ["sub 7 failed: refused"]
            clock.now += 10  # past the minute since the first line
            failures.warning(("amqp", 7), "refused", "sub %s failed: %s", 7, "refused")
        assert lines(caplog, log.name) == [
            "sub 7 failed: refused",
            "sub 7 failed: refused (12 more in the last minute)",
        ]
        assert all(r.levelno == logging.WARNING for r in caplog.records)

    def test_each_subscription_and_reason_has_its_own_line(self, caplog: pytest.LogCaptureFixture):
        failures = FailureLog(log, clock=Clock())
        with caplog.at_level(logging.WARNING, logger=log.name):
            for key, reason in [
                (1, "refused"),
                (1, "refused"),
                (2, "refused"),
                (1, "timed out"),
                (2, "refused"),
            ]:
                failures.warning(key, reason, "%s: %s", key, reason)
        assert lines(caplog, log.name) == ["1: refused", "2: refused", "1: timed out"]


class TestDeadBroker:
    async def test_every_attempt_fails_one_line_a_minute(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
        caplog: pytest.LogCaptureFixture,
    ):
        port = closed_port()  # loopback: allowed by the tests' CLOUDADMIN_OUTBOUND_ALLOW
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            f"amqp://guest:guest@127.0.0.1:{port}/%2F",
            exchange="x",
            routing_key="y",
        )
        sub_id = sub.id
        r = await client.post(
            SELLERS, json={"email": "d@sales.example", "full_name": "D"}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200
        clock = Clock()
        dispatcher.failures.clock = clock

        async def attempt() -> None:
            # Due again at once: no waiting out the backoff between attempts.
            await session.execute(update(DeliveryState).values(next_attempt_at=None))
            await session.commit()
            assert await dispatcher.deliver_once() is True

        with caplog.at_level(logging.WARNING, logger="cloudadmin.dispatcher"):
            for _ in range(5):
                await attempt()
                clock.now += 5
            failed = [m for m in lines(caplog, "cloudadmin.dispatcher") if "failed" in m]
            assert len(failed) == 1, failed
            assert f"subscription {sub_id}" in failed[0] and f"127.0.0.1:{port}" in failed[0]
            clock.now += 60
            await attempt()
        failed = [m for m in lines(caplog, "cloudadmin.dispatcher") if "failed" in m]
        assert len(failed) == 2, failed
        assert failed[1].endswith("(4 more in the last minute)"), failed[1]
        state = (
            await session.execute(
                DeliveryState.__table__.select().where(DeliveryState.subscription_id == sub_id)
            )
        ).one()
        assert state.attempts == 6  # every attempt counted, only the log is quieter
