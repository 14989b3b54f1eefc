"""The CPU instructions one list request costs the service, counted, not timed.

Timings on a shared machine swing by 15-30 % from one minute to the next, which hides
any change smaller than that. The number of instructions the service's process runs
for a request does not swing: this benchmark runs the application in-process (no HTTP
server, no load generator) against a loaded database, and counts its instructions
with valgrind's cachegrind (Debian's ``valgrind`` package):

1. the process is run twice under cachegrind: once with only the warm-up requests
   (``--warmup``, 50) and once with ``--requests`` more;
2. the difference of the two counts, divided by ``--requests``, is the instructions a
   request costs: start-up, imports and warm-up cancel out.

The events dispatcher is off (its polling is timed, not counted per request) and the
hash seed is fixed. Two runs of the same code on a quiet machine agreed within 0.3 %;
one run beside the test suite was 4 % off (the activity log's batch is timed, so a busy
machine changes how many rows each flush carries). For an A/B comparison run both trees
at once, on a quiet machine (``PYTHONPATH=<tree>/src``).

    .venv/bin/python bench/request_instructions.py --database-url URL \\
        --query client_id=6788 --requests 1000       # URL: kept by bench/addendums.py --keep

Without valgrind, ``--plain`` runs the requests once and prints their CPU time, which is
only as steady as the machine. The operator's key is the load document's
(``1_bench-operator``), as in bench/addendums.py. ``--smoke`` (CI) loads 2,000
addendums into a SQLite file and runs 20 plain requests.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIST_PATH = "/billing/org/v1/addendums"
API_KEY = b"APIKey 1_bench-operator"
SECRET_KEY = "bench-addendums"  # bench/addendums.py's


async def _requests(database_url: str, path: str, query: str, warmup: int, count: int) -> float:
    """Serves ``warmup`` then ``count`` requests in-process; the latter's CPU seconds."""
    from cloudadmin.app import create_app
    from cloudadmin.config import Settings

    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(
            database_url=database_url,
            secret_key=SECRET_KEY,
            data_dir=data_dir,
            run_dispatcher=False,
        )
        app = create_app(settings)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [(b"host", b"bench"), (b"authorization", API_KEY)],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 80),
        }

        async def one() -> None:
            sent: list[dict[str, object]] = []

            async def receive() -> dict[str, object]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, object]) -> None:
                sent.append(message)

            await app(dict(scope), receive, send)
            if sent[0]["status"] != 200:
                raise SystemExit(f"{path}?{query}: {sent[0]['status']} {sent[1:2]}")

        async with app.router.lifespan_context(app):
            for _ in range(warmup):
                await one()
            started = time.process_time()
            for _ in range(count):
                await one()
            return time.process_time() - started


def _serve(args: argparse.Namespace, count: int) -> float:
    import uvloop

    return uvloop.run(_requests(args.database_url, args.path, args.query, args.warmup, count))


def _instructions(args: argparse.Namespace, count: int) -> int:
    """Instructions of a whole run of this script serving ``count`` requests."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--database-url",
        args.database_url,
        "--path",
        args.path,
        "--query",
        args.query,
        "--serve",
        str(count),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _smoke_database(tmp: Path) -> str:
    """A SQLite file loaded with a small document (bench/gen_addendums.py)."""
    from addendums import load  # bench/addendums.py: `cloudadmin load` of the document
    from gen_addendums import write

    document = tmp / "document.json"
    with document.open("w") as out:
        write(2000, 50, 1, out)
    url = f"sqlite+aiosqlite:///{tmp / 'smoke.db'}"
    load(url, document, tmp)
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--smoke", action="store_true", help="CI: a small SQLite run, plain")
    parser.add_argument("--path", default=LIST_PATH)
    parser.add_argument("--query", default="", help="the query string, e.g. client_id=6788")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--plain", action="store_true", help="time the requests, no valgrind")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # one counted run
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            args.database_url, args.plain, args.requests = _smoke_database(Path(tmp)), True, 20
            _report(args)
        return
    if args.database_url is None:
        parser.error("--database-url is required (or --smoke)")
    if args.serve is not None:
        _serve(args, args.serve)
        return
    _report(args)


def _report(args: argparse.Namespace) -> None:
    where = Path(__import__("cloudadmin").__file__).parent
    label = f"{args.path}?{args.query}" if args.query else args.path
    if args.plain:
        seconds = _serve(args, args.requests)
        print(f"{label}: {1000 * seconds / args.requests:.3f} ms CPU a request ({where})")
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    base = _instructions(args, 0)
    full = _instructions(args, args.requests)
    per_request = (full - base) / args.requests
    print(f"{label}: {per_request:,.0f} instructions a request ({args.requests} requests, {where})")


if __name__ == "__main__":
    main()
