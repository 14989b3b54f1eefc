"""Time and peak memory of `cloudadmin export` at two sizes (100,000 and 1,000,000
addendums by default): a streamed export needs about the same memory for both.

For each size: a fresh database, a landscape of bench/gen_addendums.py loaded with
`cloudadmin load`, then `cloudadmin export FILE` in a child process whose peak
resident set (ru_maxrss) is read from the kernel. Prints, per database and size, the
load time, the export time and rate, the document's size and the export's peak RSS.

    .venv/bin/python bench/export.py                          # SQLite, 100k and 1M
    .venv/bin/python bench/export.py --database both --rows 100000,1000000
    .venv/bin/python bench/export.py --smoke                  # seconds; used by CI
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from gen_addendums import write  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402


@contextmanager
def database(kind: str, workdir: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
        return
    base = postgres_base_url()
    if base is None:
        raise SystemExit("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    url = asyncio.run(create_pg_database(base))
    try:
        yield url
    finally:
        asyncio.run(drop_pg_database(base, url))


def cli(env: dict[str, str], *args: str) -> tuple[float, int]:
    """Seconds taken and peak RSS (bytes) of one `cloudadmin` command; exits on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"cloudadmin {' '.join(args)} failed:\n{stderr}")
    return seconds, usage.ru_maxrss * 1024  # kilobytes on Linux


def measure(kind: str, rows: int, accounts: int) -> str:
    with tempfile.TemporaryDirectory(prefix="export-bench-") as tmp:
        workdir = Path(tmp)
        with database(kind, workdir) as url:
            env = {
                **os.environ,
                "CLOUDADMIN_DATABASE_URL": url,
                "CLOUDADMIN_SECRET_KEY": "bench-export",
                "CLOUDADMIN_DATA_DIR": tmp,
                "PYTHONPATH": os.pathsep.join(
                    [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
                ),
            }
            document = workdir / "in.json"
            with document.open("w", encoding="utf-8") as fh:
                write(rows, accounts, 1, fh)
            load_seconds, _ = cli(env, "load", str(document))
            document.unlink()
            out = workdir / "out.json"
            seconds, peak = cli(env, "export", str(out))
            size = out.stat().st_size
    return (
        f"{kind:<10} {rows:>10,} {load_seconds:>9.1f} {seconds:>10.1f} "
        f"{rows / seconds:>12,.0f} {size / 1e6:>9.1f} {peak / 1e6:>10.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="100000,1000000", help="comma-separated addendum counts")
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true", help="100 and 1,000 on SQLite")
    args = parser.parse_args()
    sizes = [100, 1_000] if args.smoke else [int(n) for n in args.rows.split(",")]
    accounts = 200 if args.smoke else args.accounts
    kinds = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    print(
        f"{'database':<10} {'addendums':>10} {'load s':>9} {'export s':>10} "
        f"{'addendums/s':>12} {'MB out':>9} {'peak RSS MB':>10}",
        flush=True,
    )
    for kind in kinds:
        for rows in sizes:
            print(measure(kind, rows, accounts), flush=True)


if __name__ == "__main__":
    main()
