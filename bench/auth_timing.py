"""Median time of a 401 for an unknown key id and for a wrong secret, over HTTP.

For SQLite and (when it answers) a fresh PostgreSQL database: starts ``cloudadmin serve
--demo`` on a free loopback port (failure throttle out of the way), then sends
GET /cloud/v1/users with ``apikey <unknown id>_x`` and ``apikey <demo key id>_x`` in
shuffled pairs over one keep-alive connection, and prints the median of each. They
should be equal (docs/access.md, "Refusals take the same time").

    .venv/bin/python bench/auth_timing.py                  # 500 pairs
    .venv/bin/python bench/auth_timing.py --pairs 2000 --only sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402
from tests.web.attacks import served  # noqa: E402

PATH = "/cloud/v1/users"


async def medians(base: str, known_id: str, pairs: int) -> tuple[float, float]:
    headers = {
        "unknown": "apikey 99999999_wrong-secret",
        "wrong": f"apikey {known_id}_wrong-secret",
    }
    times: dict[str, list[float]] = {"unknown": [], "wrong": []}
    shuffle = random.Random(1).shuffle
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for round_ in range(pairs + 20):
            kinds = ["unknown", "wrong"]
            shuffle(kinds)
            for kind in kinds:
                started = time.perf_counter()
                r = await client.get(PATH, headers={"Authorization": headers[kind]})
                elapsed = time.perf_counter() - started
                if r.status_code != 401:
                    raise SystemExit(f"{kind}: expected 401, got {r.status_code} {r.text}")
                if round_ >= 20:  # the first rounds warm both paths up
                    times[kind].append(elapsed)
    return statistics.median(times["unknown"]), statistics.median(times["wrong"])


def run(name: str, database_url: str | None, pairs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "CLOUDADMIN_DATA_DIR": tmp,
            "CLOUDADMIN_SECRET_KEY": "bench-auth-timing",
            "CLOUDADMIN_AUTH_FAILURE_LIMIT": "100000000/minute",
            "CLOUDADMIN_RUN_DISPATCHER": "false",
            "CLOUDADMIN_LOG_LEVEL": "WARNING",
        }
        if database_url:
            env["CLOUDADMIN_DATABASE_URL"] = database_url
        log = Path(tmp) / "server.log"
        with served(env, log, demo=True) as base:
            known_id = next(
                line.split()[1].split("_")[0]
                for line in log.read_text().splitlines()
                if line.strip().startswith("reseller ")
            )
            unknown, wrong = asyncio.run(medians(base, known_id, pairs))
    print(
        f"{name:<10} median 401: unknown id {unknown * 1000:6.2f} ms   "
        f"wrong secret {wrong * 1000:6.2f} ms   ({pairs} pairs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    if args.only != "postgresql":
        run("sqlite", None, args.pairs)
    if args.only != "sqlite":
        base = postgres_base_url()
        if base is None:
            print("postgresql: not reachable, skipped")
            return
        url = asyncio.run(create_pg_database(base))
        try:
            run("postgresql", url, args.pairs)
        finally:
            asyncio.run(drop_pg_database(base, url))


if __name__ == "__main__":
    main()
