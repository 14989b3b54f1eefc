"""List latency of GET /billing/org/v1/addendums on a large table.

Generates a landscape with bench/gen_addendums.py (10,000 accounts, N addendums),
loads it with the importer (`cloudadmin load`'s code path: validate, batched upserts,
counting triggers), then drives the real ASGI app in-process (no network, one
request at a time) with a mix of common queries; prints the load time and, per
query, requests per second, p50 and p99, and how the count was made. Runs on SQLite
and, when it answers, PostgreSQL.

    .venv/bin/python bench/bench_addendums.py                 # 1,000,000 addendums
    .venv/bin/python bench/bench_addendums.py --rows 200000 --requests 200
    .venv/bin/python bench/bench_addendums.py --smoke         # seconds; used by CI
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.migrate import upgrade
from cloudadmin.importer.command import load_into
from cloudadmin.web.app_state import app_state

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from gen_addendums import generate  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

OPERATOR, RESELLER, CLIENT = "1_bench-operator", "2_bench-reseller", "3_bench-client"


def mix(doc: dict[str, Any], rows: int) -> list[tuple[str, str, str]]:
    """(label, caller token, query string) of the measured queries."""
    heaviest, _ = Counter(a["client_id"] for a in doc["addendums"]).most_common(1)[0]
    typical = doc["addendums"][len(doc["addendums"]) // 2]["client_id"] if rows else 1
    deep = min(100_000, rows // 2)
    return [
        ("no filter (operator)", OPERATOR, "limit=25"),
        ("no filter, limit 100", OPERATOR, "limit=100"),
        ("by client (typical)", OPERATOR, f"client_id={typical}"),
        ("by client (largest)", OPERATOR, f"client_id={heaviest}"),
        ("status+product", OPERATOR, "status=active&product_id=1"),
        ("status+product -created_at", OPERATOR, "status=active&product_id=1&ordering=-created_at"),
        ("created in a month", OPERATOR, "created_after=2022-01-01&created_before=2022-02-01"),
        ("active_at an instant", OPERATOR, "active_at=2022-06-01T00:00:00Z"),
        ("plan_name search", OPERATOR, "plan_name=gr%C3%B6sse"),
        ("company_name search", OPERATOR, "company_name=m%C3%BCller"),
        (f"deep offset {deep}", OPERATOR, f"offset={deep}"),
        ("reseller: no filter", RESELLER, ""),
        ("reseller: status", RESELLER, "status=active"),
        ("client account: no filter", CLIENT, ""),
    ]


def how_counted(query: str, token: str) -> str:
    names = {part.split("=")[0] for part in query.split("&") if part}
    names -= {"limit", "offset", "ordering"}
    counters = {"status", "product_id", "product_internal_name", "client_id", "reseller_id"}
    if token == CLIENT or names - counters:
        return "count(*)"
    return "counters"


async def measure(client: httpx.AsyncClient, label: str, token: str, query: str, n: int) -> None:
    headers = {"Authorization": f"apikey {token}"}
    url = "/billing/org/v1/addendums" + (f"?{query}" if query else "")
    r = await client.get(url, headers=headers)  # warm caches and plans
    if r.status_code != 200:
        raise SystemExit(f"{label}: {r.status_code} {r.text}")
    count = r.json()["count"]
    timings = []
    for _ in range(n):
        t0 = time.perf_counter()
        await client.get(url, headers=headers)
        timings.append(time.perf_counter() - t0)
    timings.sort()
    p50 = statistics.median(timings) * 1000
    p99 = timings[max(int(len(timings) * 0.99) - 1, 0)] * 1000
    print(
        f"  {label:<30} {n / sum(timings):7.0f} req/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms"
        f"  count {count:>8} ({how_counted(query, token)})",
        flush=True,
    )


async def run(url: str, label: str, doc: dict[str, Any], rows: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await asyncio.to_thread(upgrade, url)  # Alembic runs its own event loop
        settings = Settings(database_url=url, secret_key="bench", data_dir=Path(tmp))
        t0 = time.perf_counter()
        await load_into(settings, doc)
        loaded = time.perf_counter() - t0
        print(
            f"{label}: loaded {rows} addendums over {len(doc['clients'])} accounts in "
            f"{loaded:.1f} s ({rows / max(loaded, 1e-9):,.0f} addendums/s); "
            f"{requests} requests per query",
            flush=True,
        )
        app = create_app(settings)
        if url.startswith("postgresql"):  # the state autovacuum reaches after a bulk load
            async with app_state(app).engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("VACUUM ANALYZE"))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:
            for name, token, query in mix(doc, rows):
                await measure(c, name, token, query, requests)
        await app_state(app).engine.dispose()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.accounts, args.requests = 2_000, 200, 5
    t0 = time.perf_counter()
    doc = generate(args.rows, args.accounts)
    print(f"generated {args.rows} addendums in {time.perf_counter() - t0:.1f} s", flush=True)
    if args.only != "postgresql":
        with tempfile.TemporaryDirectory() as tmp:
            await run(
                f"sqlite+aiosqlite:///{tmp}/bench.db", "sqlite", doc, args.rows, args.requests
            )
    if args.only == "sqlite":
        return
    base = postgres_base_url()
    if base is None:
        print("postgresql: not reachable, skipped")
        return
    url = await create_pg_database(base)
    try:
        await run(url, "postgresql", doc, args.rows, args.requests)
    finally:
        await drop_pg_database(base, url)


if __name__ == "__main__":
    asyncio.run(main())
