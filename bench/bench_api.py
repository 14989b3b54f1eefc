"""Request latency of the foundation: auth + one operation + activity log row.

Runs the real ASGI app in-process (no network) against SQLite and, when it answers,
PostgreSQL; prints requests per second and latency percentiles per operation.

    .venv/bin/python bench/bench_api.py [--requests 2000] [--log-rows 100000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.migrate import upgrade
from cloudadmin.db.models import ActivityLogEntry, ApiKey, Client, Seller, User, user_groups
from cloudadmin.db.types import utcnow
from cloudadmin.kit.crypto import hash_api_secret
from cloudadmin.web.app_state import app_state

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

SECRET = "bench-secret"


async def seed(app, log_rows: int) -> str:  # type: ignore[no-untyped-def]
    async with app_state(app).sessionmaker() as s:
        s.add_all(
            [
                Client(
                    id=1, email="r@example.com", company_name="Reseller", client_type="reseller"
                ),
                User(id=1, email="u@example.com", client_id=1),
                ApiKey(id=1, user_id=1, secret_hash=hash_api_secret(1, SECRET)),
                Seller(email="s@example.com", full_name="S", reseller_id=1, company="R"),
            ]
        )
        await s.flush()
        await s.execute(insert(user_groups), [{"user_id": 1, "group_id": 1}])
        now = utcnow()
        batch = []
        for i in range(log_rows):
            batch.append(
                dict(
                    actions="get_seller",
                    data="",
                    user_email="u@example.com",
                    client_id=1 + (i % 50 != 0) * (i % 997 + 2),
                    token_id=1,
                    user_id=1,
                    requested_at=now - timedelta(seconds=log_rows - i),
                    path="/iam/admin/sellers/1",
                    remote_ip_address="127.0.0.1",
                    host="bench",
                    method="GET",
                    query_params="",
                    status_code=200 if i % 10 else 404,
                    reverted=i % 10 == 0,
                    request_id="b",
                )
            )
            if len(batch) == 10_000:
                await s.execute(insert(ActivityLogEntry), batch)
                batch = []
        if batch:
            await s.execute(insert(ActivityLogEntry), batch)
        await s.commit()
    return f"1_{SECRET}"


async def measure(client: httpx.AsyncClient, name: str, n: int, make) -> None:  # type: ignore[no-untyped-def]
    timings = []
    for i in range(n):
        method, url, body = make(i)
        t0 = time.perf_counter()
        r = await client.request(method, url, json=body)
        timings.append(time.perf_counter() - t0)
        if r.status_code >= 400:
            raise SystemExit(f"{name}: {r.status_code} {r.text}")
    timings.sort()
    p50 = statistics.median(timings) * 1000
    p95 = timings[int(len(timings) * 0.95) - 1] * 1000
    print(f"  {name:<32} {n / sum(timings):8.0f} req/s   p50 {p50:6.2f} ms   p95 {p95:6.2f} ms")


async def run(url: str, label: str, requests: int, log_rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await asyncio.to_thread(upgrade, url)  # Alembic runs its own event loop
        app = create_app(Settings(database_url=url, secret_key="bench", data_dir=Path(tmp)))
        token = await seed(app, log_rows)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://bench",
            headers={"Authorization": f"apikey {token}"},
        ) as c:
            print(f"{label}: {log_rows} activity log rows, {requests} requests per operation")
            await measure(
                c,
                "GET /iam/admin/sellers/1",
                requests,
                lambda i: ("GET", "/iam/admin/sellers/1", None),
            )
            await measure(
                c,
                "POST /iam/admin/sellers",
                requests,
                lambda i: (
                    "POST",
                    "/iam/admin/sellers",
                    {"email": f"b{i}@example.com", "full_name": "B"},
                ),
            )
            await measure(
                c,
                "GET activity_log (limit 25)",
                requests,
                lambda i: ("GET", "/iam/activity_log/requests?limit=25", None),
            )
            await measure(
                c,
                "GET activity_log status_code=4",
                requests,
                lambda i: ("GET", "/iam/activity_log/requests?status_code=4", None),
            )
        # The reads' log rows still waiting for their batch, as at the service's shutdown:
        # not after the database is dropped.
        await app_state(app).request_log.close()
        await app_state(app).engine.dispose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--log-rows", type=int, default=100_000)
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.log_rows = 20, 200
    with tempfile.TemporaryDirectory() as tmp:
        await run(f"sqlite+aiosqlite:///{tmp}/bench.db", "sqlite", args.requests, args.log_rows)
    base = postgres_base_url()
    if base is None:
        print("postgresql: not reachable, skipped")
        return
    url = await create_pg_database(base)
    try:
        await run(url, "postgresql", args.requests, args.log_rows)
    finally:
        await drop_pg_database(base, url)


if __name__ == "__main__":
    asyncio.run(main())
