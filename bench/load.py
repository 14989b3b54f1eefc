"""`cloudadmin load` of N addendums on PostgreSQL against a bulk COPY of the same rows.

1. writes a load document with N addendums over 10,000 accounts (bench/gen_addendums.py);
2. loads it into a fresh database with the load command's code (JSON parsing,
   validation, writing, counters, indexes, statistics: the whole `cloudadmin load`
   after its migration) and checks that the addendum counters are exact (every
   counter table against COUNT(*) over the rows);
3. into a second fresh database holding the same accounts, COPYs the very rows the
   load stored (read back beforehand, outside the time) the way a person would by
   hand: one transaction that drops the table's secondary indexes and foreign key,
   COPYs, creates them again and ANALYZEs (no counters: that is the loader's extra);
4. prints both times and their ratio (the target: at most 2), and the loading
   process's peak memory (the load runs in a process of its own).

    .venv/bin/python bench/load.py                  # 1,000,000 addendums
    .venv/bin/python bench/load.py --rows 200000
    .venv/bin/python bench/load.py --rows 10000000 --accounts 100000
    .venv/bin/python bench/load.py --rows 10000000 --accounts 100000 \
        --document ten-million.json                 # written once, loaded again
    .venv/bin/python bench/load.py --smoke          # seconds; used by CI

``--document`` keeps the load document in that file: written when it does not exist,
read as it is when it does (it must have been written with the same ``--rows``,
``--accounts`` and generator). ``--smoke`` loads 3,000 addendums with the bulk
threshold lowered so that the COPY path runs, and the document read in parts; its
times say nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.config import Settings
from cloudadmin.db.migrate import upgrade
from cloudadmin.importer import document_parts
from cloudadmin.importer.command import run_load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import gen_addendums  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

COUNTER_CHECKS = {
    "addendum_counts": (
        "SELECT client_id, reseller_key, status, product_id, shard, n FROM addendum_counts"
        " WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5",
        "SELECT client_id, coalesce(reseller_id, -1), status, product_id, id % 16, count(*)"
        " FROM addendums GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5",
    ),
    "addendum_totals": (
        "SELECT status, product_id, shard, n FROM addendum_totals WHERE n <> 0 ORDER BY 1, 2, 3",
        "SELECT status, product_id, id % 16, count(*) FROM addendums GROUP BY 1, 2, 3"
        " ORDER BY 1, 2, 3",
    ),
    # After a load into an empty table the id bounds are tight, not only bounds.
    "addendum_days": (
        "SELECT day, shard, n, min_id, max_id FROM addendum_days WHERE n <> 0 ORDER BY 1, 2",
        "SELECT addendum_day(created_at), id % 16, count(*), min(id), max(id) FROM addendums"
        " GROUP BY 1, 2 ORDER BY 1, 2",
    ),
}


def plain(url: str) -> str:
    return url.replace("+asyncpg", "")


def load(url: str, document: Path, data_dir: Path) -> tuple[float, float, float]:
    """`cloudadmin load DOCUMENT` (the schema is migrated already) in a process of its
    own: its wall time, its CPU time (the server's is not in it), which says more than
    the wall time on a busy machine, and its peak resident memory in MB."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            url,
            str(document),
            str(data_dir),
            str(bulk_counts.BULK_THRESHOLD),
            str(document_parts.STREAM_BYTES),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"cloudadmin load failed:\n{done.stderr}")
    figures = json.loads(done.stdout.splitlines()[-1])
    return figures["elapsed"], figures["cpu"], figures["peak_mb"]


def child(url: str, document: str, data_dir: str, threshold: str, stream_bytes: str) -> None:
    """The loading process: run_load, then its figures as one JSON line."""
    bulk_counts.BULK_THRESHOLD = int(threshold)
    document_parts.STREAM_BYTES = int(stream_bytes)
    settings = Settings(database_url=url, secret_key="bench-load", data_dir=Path(data_dir))
    out, err = io.StringIO(), io.StringIO()
    t0, cpu0 = time.perf_counter(), time.process_time()
    code = run_load(settings, document, out, err)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if code != 0:
        raise SystemExit(err.getvalue())
    # ru_maxrss is in kilobytes on Linux.
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"elapsed": elapsed, "cpu": cpu, "peak_mb": peak_mb}))


async def check_counters(url: str, rows: int) -> None:
    conn = await asyncpg.connect(plain(url))
    try:
        stored = await conn.fetchval("SELECT count(*) FROM addendums")
        if stored != rows:
            raise SystemExit(f"{stored} addendums stored, {rows} in the document")
        for table, (kept, truth) in COUNTER_CHECKS.items():
            if [tuple(r) for r in await conn.fetch(kept)] != [
                tuple(r) for r in await conn.fetch(truth)
            ]:
                raise SystemExit(f"{table} does not match COUNT(*) over the addendums")
    finally:
        await conn.close()


async def stored_rows(url: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    conn = await asyncpg.connect(plain(url))
    try:
        records = await conn.fetch("SELECT * FROM addendums ORDER BY id")
        columns = list(records[0].keys()) if records else []
        return columns, [tuple(r) for r in records]
    finally:
        await conn.close()


async def bulk_copy(url: str, columns: list[str], rows: list[tuple[Any, ...]]) -> float:
    """Seconds of a hand-made bulk COPY of ``rows`` with the table's indexes + ANALYZE."""
    conn = await asyncpg.connect(plain(url))
    try:
        t0 = time.perf_counter()
        async with conn.transaction():
            indexes = await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'addendums'"
                " AND indexname <> 'pk_addendums'"
            )
            foreign = await conn.fetch(
                "SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint"
                " WHERE conrelid = 'addendums'::regclass AND contype = 'f'"
            )
            for index in indexes:
                await conn.execute(f'DROP INDEX "{index["indexname"]}"')
            for fk in foreign:
                await conn.execute(f'ALTER TABLE addendums DROP CONSTRAINT "{fk["conname"]}"')
            await conn.execute("ALTER TABLE addendums DISABLE TRIGGER USER")
            await conn.copy_records_to_table("addendums", columns=columns, records=rows)
            await conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
            for index in indexes:
                await conn.execute(index["indexdef"])
            for fk in foreign:
                await conn.execute(
                    f'ALTER TABLE addendums ADD CONSTRAINT "{fk["conname"]}" {fk["def"]}'
                )
            await conn.execute("ALTER TABLE addendums ENABLE TRIGGER USER")
            await conn.execute("ANALYZE addendums")
        return time.perf_counter() - t0
    finally:
        await conn.close()


def write_documents(
    rows: int, accounts: int, tmp: Path, kept: Path | None = None
) -> tuple[Path, Path]:
    """The load document (``kept`` if given, written there if it does not exist), and
    the same accounts without addendums (for the COPY)."""
    document, accounts_only = kept or tmp / "load.json", tmp / "accounts.json"
    if not document.exists():
        with document.open("w", encoding="utf-8") as out:
            gen_addendums.write(rows, accounts, 1, out)
    with accounts_only.open("w", encoding="utf-8") as out:
        gen_addendums.write(0, accounts, 1, out)
    return document, accounts_only


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI")
    parser.add_argument("--document", type=Path, help="keep the load document in this file")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.smoke:
        args.rows, args.accounts = 3_000, 100
        bulk_counts.BULK_THRESHOLD = 1_000  # so that the COPY path runs
        document_parts.STREAM_BYTES = 0  # and the document is read in parts
    base = postgres_base_url()
    if base is None:
        print("postgresql: not reachable, skipped")
        return
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        t0 = time.perf_counter()
        document, accounts_only = write_documents(args.rows, args.accounts, tmp, args.document)
        print(
            f"the document: {args.rows} addendums over {args.accounts} accounts "
            f"({document.stat().st_size / 1e6:.0f} MB) ready in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        print(
            "load average (1, 5, 15 min) at the start: "
            + ", ".join(f"{n:.1f}" for n in os.getloadavg()),
            flush=True,
        )
        loaded_url = asyncio.run(create_pg_database(base))
        copied_url = asyncio.run(create_pg_database(base))
        try:
            upgrade(loaded_url)
            upgrade(copied_url)
            loaded, cpu, peak = load(loaded_url, document, tmp)
            print(
                f"postgresql: cloudadmin load {args.rows} addendums: {loaded:.1f} s "
                f"({cpu:.1f} s CPU in the loading process, peak memory {peak:.0f} MB)",
                flush=True,
            )
            asyncio.run(check_counters(loaded_url, args.rows))
            print(
                "postgresql: counters exact (addendum_counts, addendum_totals, "
                "addendum_days = COUNT(*) over the rows)",
                flush=True,
            )
            columns, rows = asyncio.run(stored_rows(loaded_url))
            load(copied_url, accounts_only, tmp)
            copied = asyncio.run(bulk_copy(copied_url, columns, rows))
            print(
                f"postgresql: bulk COPY of the same rows + indexes + ANALYZE: {copied:.1f} s",
                flush=True,
            )
            print(
                f"postgresql: ratio load / COPY = {loaded / copied:.2f} (target <= 2)", flush=True
            )
            print(
                "load average (1, 5, 15 min) at the end: "
                + ", ".join(f"{n:.1f}" for n in os.getloadavg())
                + f" on {os.cpu_count()} CPUs",
                flush=True,
            )
        finally:
            asyncio.run(drop_pg_database(base, loaded_url))
            asyncio.run(drop_pg_database(base, copied_url))


if __name__ == "__main__":
    main()
