"""Events: delivery throughput to RabbitMQ, and what the outbox adds to a write.

1. Events per second delivered end to end (outbox -> broker -> consumer) by one and by
   two `cloudadmin worker` processes on PostgreSQL.
2. Latency of PATCH /iam/admin/sellers/{id} without a subscription and with one (the
   outbox write plus its delivery row), on SQLite and PostgreSQL.

    .venv/bin/python bench/events.py [--events 20000] [--patches 500] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aio_pika
import httpx
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

from cloudadmin.app import create_app  # noqa: E402
from cloudadmin.config import Settings  # noqa: E402
from cloudadmin.db.migrate import upgrade  # noqa: E402
from cloudadmin.db.models import (  # noqa: E402
    AmqpSubscription,
    ApiKey,
    Client,
    EventDelivery,
    Seller,
    User,
    UserActionEvent,
)
from cloudadmin.db.types import utcnow  # noqa: E402
from cloudadmin.kit.crypto import hash_api_secret  # noqa: E402
from cloudadmin.web.app_state import app_state

RABBIT = os.environ.get("CLOUDADMIN_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
SECRET_KEY = "bench-events"
# The local RabbitMQ is on loopback, which the service refuses by default.
OUTBOUND_ALLOW = "127.0.0.0/8,::1"


async def throughput(url: str, events: int, workers: int, tmp: Path) -> float:
    await asyncio.to_thread(upgrade, url)
    app = create_app(
        Settings(
            database_url=url,
            secret_key=SECRET_KEY,
            data_dir=tmp,
            outbound_allow=OUTBOUND_ALLOW.split(","),
        )
    )
    connection = await aio_pika.connect_robust(RABBIT)
    channel = await connection.channel()
    queue = await channel.declare_queue(exclusive=True)
    subs = 20
    async with app_state(app).sessionmaker() as s:
        now = utcnow()
        for i in range(1, subs + 1):
            s.add(Client(id=i, email=f"c{i}@example.com", company_name=f"C{i}"))
            s.add(
                AmqpSubscription(
                    id=i,
                    client_id=i,
                    exchange=None,
                    routing_key=queue.name,
                    connection_string_encrypted=app_state(app).secret_box.encrypt(RABBIT),
                )
            )
        await s.flush()
        rows, deliveries = [], []
        for n in range(1, events + 1):
            rows.append(
                {
                    "id": n,
                    "event_id": f"00000000-0000-4000-8000-{n:012d}",
                    "client_id": 1 + n % subs,
                    "reseller_id": None,
                    "body": {"n": n, "action_type": "update", "api_group": "bench"},
                    "created_at": now,
                }
            )
            deliveries.append(
                {"id": n, "event_id": n, "subscription_id": 1 + n % subs, "delivered": False}
            )
        for start in range(0, events, 5000):
            await s.execute(insert(UserActionEvent), rows[start : start + 5000])
            await s.execute(insert(EventDelivery), deliveries[start : start + 5000])
        await s.commit()
    await app_state(app).engine.dispose()
    received = 0
    done = asyncio.Event()

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        nonlocal received
        received += 1
        if received >= events:
            done.set()

    await queue.consume(on_message, no_ack=True)
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": url,
        "CLOUDADMIN_SECRET_KEY": SECRET_KEY,
        "CLOUDADMIN_DATA_DIR": str(tmp),
        "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.05",
        "CLOUDADMIN_LOG_LEVEL": "WARNING",
        "CLOUDADMIN_OUTBOUND_ALLOW": OUTBOUND_ALLOW,
    }
    started = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-m", "cloudadmin", "worker"], env=env)  # noqa: ASYNC220
        for _ in range(workers)
    ]
    try:
        await asyncio.wait_for(done.wait(), 600)
        elapsed = time.perf_counter() - started
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)
        await connection.close()
    return events / elapsed


async def patch_latency(url: str, patches: int, tmp: Path, subscribed: bool) -> float:
    await asyncio.to_thread(upgrade, url)
    app = create_app(
        Settings(
            database_url=url,
            secret_key=SECRET_KEY,
            data_dir=tmp,
            outbound_allow=OUTBOUND_ALLOW.split(","),
        )
    )
    async with app_state(app).sessionmaker() as s:
        s.add(Client(id=900, email="r@example.com", company_name="R", client_type="reseller"))
        s.add(User(id=900, email="u@example.com", client_id=900))
        s.add(ApiKey(id=900, user_id=900, secret_hash=hash_api_secret(900, "k")))
        s.add(Seller(id=900, email="s@example.com", full_name="S", reseller_id=900, company="R"))
        if subscribed:
            s.add(
                AmqpSubscription(
                    id=900,
                    client_id=900,
                    exchange=None,
                    routing_key="x",
                    connection_string_encrypted=app_state(app).secret_box.encrypt(RABBIT),
                )
            )
        await s.commit()
    timings = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", headers={"Authorization": "apikey 900_k"}
    ) as c:
        for i in range(patches):
            t0 = time.perf_counter()
            r = await c.patch(
                "/iam/admin/sellers/900", json={"email": "s@example.com", "full_name": f"S{i}"}
            )
            timings.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
    await app_state(app).engine.dispose()
    return statistics.median(timings) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--patches", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI")
    args = parser.parse_args()
    if args.smoke:
        args.events, args.patches = 200, 10
    base = postgres_base_url()
    with tempfile.TemporaryDirectory() as tmp:
        for label, make_url in [
            ("sqlite", lambda n: f"sqlite+aiosqlite:///{tmp}/{n}.db"),
            ("postgresql", None),
        ]:
            if make_url is None and base is None:
                print("postgresql: not reachable, skipped")
                continue
            for subscribed in (False, True):
                if make_url is not None:
                    url = make_url(f"patch{subscribed}")
                else:
                    url = await create_pg_database(base)  # type: ignore[arg-type]
                try:
                    ms = await patch_latency(url, args.patches, Path(tmp), subscribed)
                finally:
                    if make_url is None:
                        await drop_pg_database(base, url)  # type: ignore[arg-type]
                print(
                    f"{label}: PATCH seller p50 {ms:6.2f} ms "
                    f"({'with' if subscribed else 'without'} a subscription)"
                )
        if base is None:
            return
        for workers in (1, 2):
            url = await create_pg_database(base)
            try:
                rate = await throughput(url, args.events, workers, Path(tmp))
            finally:
                await drop_pg_database(base, url)
            print(
                f"postgresql: {args.events} events delivered by {workers} worker(s): "
                f"{rate:8.0f} events/s"
            )


if __name__ == "__main__":
    asyncio.run(main())
