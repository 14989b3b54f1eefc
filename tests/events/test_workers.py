"""`cloudadmin worker` processes: crash safety and sharing the work (real RabbitMQ)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import EventDelivery, UserActionEvent
from cloudadmin.db.types import utcnow
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.web.app_state import app_state
from tests.conftest import OUTBOUND_ALLOW
from tests.events.conftest import Inbox
from tests.events.helpers import make_subscription
from tests.factories import make_client
from tests.servers import free_port
from tests.waiting import until

pytestmark = pytest.mark.slow


async def owe_events(session: AsyncSession, subscription_ids: list[int], per_sub: int) -> set[str]:
    """Puts ``per_sub`` events per subscription straight into the outbox, and wakes the
    dispatchers at commit as the service's own writes do (PostgreSQL's NOTIFY): without
    it they would find the events only at their idle poll, one of them long before the
    other."""
    now = utcnow()
    events, deliveries, ids = [], [], set()
    n = 0
    for sid in subscription_ids:
        for _ in range(per_sub):
            n += 1
            event_id = f"00000000-0000-4000-8000-{n:012d}"
            ids.add(event_id)
            events.append(
                {
                    "id": n,
                    "event_id": event_id,
                    "client_id": 1,
                    "reseller_id": None,
                    "body": {"id": event_id, "n": n},
                    "created_at": now,
                }
            )
            deliveries.append({"id": n, "event_id": n, "subscription_id": sid, "delivered": False})
    for start in range(0, len(events), 5000):
        await session.execute(insert(UserActionEvent), events[start : start + 5000])
        await session.execute(insert(EventDelivery), deliveries[start : start + 5000])
    await outbox_written(session)
    await session.commit()
    return ids


async def owed_count(session: AsyncSession) -> int:
    """Events not marked delivered, read afresh (no snapshot kept)."""
    owed = select(func.count()).where(EventDelivery.delivered.is_(False))
    count = (await session.execute(owed)).scalar_one()
    await session.rollback()
    return count


def start_worker(settings: Settings, tmp: Path, name: str, **env: str) -> subprocess.Popen:
    environment = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": settings.effective_database_url,
        "CLOUDADMIN_SECRET_KEY": settings.resolved_secret_key(),
        "CLOUDADMIN_DATA_DIR": str(tmp),
        "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.1",
        "CLOUDADMIN_DISPATCHER_LEASE_SECONDS": "6",
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        **env,
    }
    with (tmp / f"{name}.log").open("w") as log:  # the worker writes to its own copy
        return subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", "worker"],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def started(log: Path) -> bool:
    return " started" in log.read_text()


def missing(expected: set[str], inbox: Inbox) -> str:
    return f"{len(expected - {m.message_id for m in inbox.received})} of {len(expected)}"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


class TestWorkerCrash:
    async def test_sigkill_mid_batch_loses_nothing(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
        settings: Settings,
        tmp_path: Path,
    ):
        account = await make_client(session)
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        # Small batches: the first worker is still far from done when the test, polling,
        # sees its first delivery and kills it, even on a busy machine.
        expected = await owe_events(session, [sub.id], 1000)
        # The second worker takes the killed one's claim over when its lease ends: a
        # 1 s lease rather than 6 (a batch published twice is allowed, a lost one is not).
        lease = {"CLOUDADMIN_DISPATCHER_LEASE_SECONDS": "1"}
        first = start_worker(
            settings, tmp_path, "first", CLOUDADMIN_DISPATCHER_BATCH_SIZE="10", **lease
        )
        try:
            await until(lambda: len(inbox.received) > 0, "a first delivery", timeout=60)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        finally:
            stop(first)
        # It died with at most a batch (10) per lane (8) published and not marked: more
        # left owed means events it never published, which the second worker delivers.
        owed = await owed_count(session)
        assert owed > 8 * 10, f"killed too late: {owed} events left owed"
        second = start_worker(settings, tmp_path, "second", **lease)
        try:
            await until(
                lambda: {m.message_id for m in inbox.received} >= expected,
                lambda: f"every event, {missing(expected, inbox)} lost",
                timeout=90,
            )
        finally:
            stop(second)
        assert second.returncode == 0


class TestTwoWorkers:
    # 400 events over 20 subscriptions prove sharing without loss or double publishing;
    # the large run is bench/events.py's. Both workers run before the events are owed,
    # so that neither finds them all alone however long the other takes to start. The
    # lease is long enough that a batch slowed by a busy machine keeps its claim: a lease
    # lost mid-batch is allowed to publish again (at least once), which is not what this
    # test is about.
    async def test_share_events_without_loss_or_double_publishing(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
        settings: Settings,
        tmp_path: Path,
        dialect: str,
    ):
        if dialect != "postgresql":
            pytest.skip("several workers need PostgreSQL (SQLite allows one dispatcher)")
        subs = []
        for _ in range(20):
            account = await make_client(session)
            sub = await make_subscription(
                session,
                app_state(app).secret_box,
                account,
                rabbit_url,
                exchange=inbox.exchange,
                routing_key=inbox.routing_key,
            )
            subs.append(sub.id)
        # Batches of 5: 80 of them, so that the worker a busy machine wakes first is
        # still at work when the other joins.
        workers = [
            start_worker(
                settings,
                tmp_path,
                f"w{i}",
                CLOUDADMIN_DISPATCHER_LEASE_SECONDS="60",
                CLOUDADMIN_DISPATCHER_BATCH_SIZE="5",
            )
            for i in range(2)
        ]
        try:
            await until(
                lambda: all(started(tmp_path / f"w{i}.log") for i in range(2)),
                lambda: (
                    "both workers to start: "
                    + "; ".join((tmp_path / f"w{i}.log").read_text()[-2000:] for i in range(2))
                ),
                timeout=120,
            )
            expected = await owe_events(session, subs, 20)
            await until(
                lambda: len(inbox.received) >= len(expected),
                lambda: f"every event, {missing(expected, inbox)} not delivered",
                timeout=300,
            )
        finally:
            for w in workers:
                stop(w)
        # Stopped, they publish no more: a late duplicate arrives before the marker.
        received = [m.message_id for m in await inbox.flushed()]
        assert set(received) == expected
        assert len(received) == len(expected), "an event was published twice"
        shares = []
        for i in range(2):
            text = (tmp_path / f"w{i}.log").read_text()
            line = next(ln for ln in text.splitlines() if "delivered" in ln and "stopping" in ln)
            shares.append(int(line.rsplit("delivered", 1)[1].split()[0]))
        assert sum(shares) == len(expected) and min(shares) > 0, shares


class TestWorkerMetrics:
    async def test_a_worker_serves_its_delivery_counts(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
        settings: Settings,
        tmp_path: Path,
    ):
        account = await make_client(session)
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        expected = await owe_events(session, [sub.id], 3)
        port = free_port()
        worker = start_worker(
            settings, tmp_path, "metrics", CLOUDADMIN_WORKER_METRICS_PORT=str(port)
        )
        try:
            await until(
                lambda: {m.message_id for m in inbox.received} >= expected,
                lambda: f"every event, {missing(expected, inbox)} not delivered",
                timeout=90,
            )
            async with httpx.AsyncClient() as http:
                scrape = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
        finally:
            stop(worker)
        assert 'cloudadmin_event_deliveries_total{kind="amqp"} 3.0' in scrape, scrape
        assert "cloudadmin_mail_failures_total 0.0" in scrape

    async def test_a_worker_with_a_token_answers_only_its_bearer(
        self, settings: Settings, tmp_path: Path
    ):
        token = "worker-scrape-token-0123456789"
        port = free_port()
        worker = start_worker(
            settings,
            tmp_path,
            "metrics-token",
            CLOUDADMIN_WORKER_METRICS_PORT=str(port),
            CLOUDADMIN_METRICS_BEARER_TOKEN=token,
        )
        url = f"http://127.0.0.1:{port}/metrics"

        async def listening() -> bool:
            try:
                async with httpx.AsyncClient() as http:
                    await http.get(url)
            except httpx.TransportError:
                return False
            return True

        try:
            await until(listening, lambda: "the worker's metrics port to listen", timeout=90)
            async with httpx.AsyncClient() as http:
                anonymous = await http.get(url)
                wrong = await http.get(url, headers={"Authorization": "Bearer " + "x" * 30})
                bearer = await http.get(url, headers={"Authorization": f"Bearer {token}"})
        finally:
            stop(worker)
        assert anonymous.status_code == 401, anonymous.text
        assert wrong.status_code == 401, wrong.text
        assert "cloudadmin_" not in anonymous.text + wrong.text
        assert bearer.status_code == 200
        assert "cloudadmin_mail_failures_total" in bearer.text
