"""The Admin Portal's pages against the API operations behind them, over HTTP.

On PostgreSQL (SQLite when PostgreSQL does not answer, or with ``--only sqlite``):

1. writes a load document with N addendums over 10,000 accounts (bench/gen_addendums.py,
   as bench/addendums.py does) and loads it with ``cloudadmin load`` (then VACUUM
   ANALYZE), or takes a database loaded before (``--database-url``, kept by ``--keep``
   here or by bench/addendums.py; brought to this code's schema first);
2. gives the document's operator (user 1, whose API key is ``1_bench-operator``) a
   password, starts ``cloudadmin serve --workers 1`` on a free loopback port (its access
   log as JSON: each request's ``duration_ms``, from its arrival in the application to
   the end of its answer) and signs in through the sign-in form (a portal session
   cookie), once per connection: one person per connection;
3. for each page of PAGES that the portal serves (a section not built yet is skipped),
   drives the page with the session cookie and then the API operation behind it with the
   API key, ``--seconds`` each at ``--connections`` connections (the load generator of
   bench/addendums.py, in its own process), after ``--warmup``; the two in turn,
   ``--rounds`` times (3), so that both are sampled across the same stretch of time;
4. streams the CSV export of every addendum (``/portal/billing/export.csv``) and counts
   its rows; the serve process's peak RSS (VmHWM) is read before and after;
5. prints one table: per page, the server time p50 / p99 (ms, from the access log) of
   the page and of its API operation and their ratio (page ÷ API, the target at most
   1.5), the client-side p50 and req/s; then the addendum browser's first page p50 (the
   target at most 25 ms), the CSV's rows/s (the target at least 50,000) and the peak RSS.

A page is one line of PAGES: its label, its portal path, the API path behind it (None
when the API has no such operation). ``{busiest}`` is the client with most addendums.

    .venv/bin/python bench/bench_portal.py                   # 1,000,000 addendums
    .venv/bin/python bench/bench_portal.py --keep             # prints the kept URL
    .venv/bin/python bench/bench_portal.py --database-url postgresql+asyncpg://.../db
    .venv/bin/python bench/bench_portal.py --smoke            # seconds; used by CI

Flags: --rows, --accounts (the document); --seconds, --warmup, --connections, --rounds (the
measurement); --pin SERVER_CPU,LOAD_CPU|none; --only sqlite|postgresql; --pages WORDS
(labels containing one of them); --database-url URL, --keep; --no-csv; --smoke.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
from addendums import (  # noqa: E402
    CLOUDADMIN_SRC,
    HOST,
    OPERATOR,
    Result,
    _connection,
    _pin_load_generator,
    free_port,
    load,
    migrate,
    service_env,
    start,
    stop,
    vacuum,
)
from gen_addendums import write  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

# (label, portal page, the API operation behind it or None). One line per page.
PAGES: list[tuple[str, str, str | None]] = [
    ("addendums, first page", "/portal/billing", "/billing/org/v1/addendums"),
    (
        "addendums, busiest client",
        "/portal/billing?client_id={busiest}",
        "/billing/org/v1/addendums?client_id={busiest}",
    ),
    (
        "addendums, status+product",
        "/portal/billing?status=active&product_id=1",
        "/billing/org/v1/addendums?status=active&product_id=1",
    ),
    ("accounts", "/portal/accounts", "/iam/clients?limit=25"),
    ("users", "/portal/users", "/iam/users?limit=25"),
    ("activity log", "/portal/activity", "/iam/activity_log/requests?limit=25"),
    ("user actions", "/portal/events/actions", "/cloud/v1/user_actions?limit=25"),
    ("events", "/portal/events", None),
    ("addendum chart", "/portal/billing/chart", None),
    ("monthly reports", "/portal/billing/reports", None),
]
FIRST_PAGE = "addendums, first page"
CSV_PATH = "/portal/billing/export.csv"
OPERATOR_USER_ID = 1
PASSWORD = "bench portal password"
# The page a section not built yet answers (portal/templates/coming.html).
COMING = "<h1>Coming</h1>"


async def set_password(url: str) -> None:
    """The document's operator may sign in to the portal (the document gives no
    passwords)."""
    from sqlalchemy import update
    from sqlalchemy.ext.asyncio import create_async_engine

    from cloudadmin.db.models import User
    from cloudadmin.kit.crypto import hash_password

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(User)
                .where(User.id == OPERATOR_USER_ID)
                .values(password_hash=hash_password(PASSWORD))
            )
    finally:
        await engine.dispose()


async def busiest_client(url: str) -> tuple[int, int]:
    """The client with most addendums, and how many there are in all."""
    from sqlalchemy import func, select
    from sqlalchemy.ext.asyncio import create_async_engine

    from cloudadmin.db.models import Addendum

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            stmt = (
                select(Addendum.client_id)
                .group_by(Addendum.client_id)
                .order_by(func.count().desc())
                .limit(1)
            )
            busiest = (await conn.execute(stmt)).scalar_one()
            total = (await conn.execute(select(func.count()).select_from(Addendum))).scalar_one()
            return int(busiest), int(total)
    finally:
        await engine.dispose()


def sign_in(base: str) -> str:
    """The portal session cookie of the operator, signed in through the form."""
    with httpx.Client(base_url=base, timeout=30) as client:
        form = client.get("/portal/sign-in")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        assert token, form.text
        done = client.post(
            "/portal/sign-in",
            data={
                "email": "root@operator.example",
                "password": PASSWORD,
                "csrf_token": token.group(1),
            },
        )
        if done.status_code != 303 or "portal_session" not in client.cookies:
            raise SystemExit(f"signing in failed: {done.status_code} {done.text[:500]}")
        return str(client.cookies["portal_session"])


def served(base: str, cookie: str, path: str) -> bool:
    """Whether the portal serves the page (a section not built yet answers "Coming")."""
    r = httpx.get(base + path, headers={"Cookie": f"portal_session={cookie}"}, timeout=60)
    return r.status_code == 200 and COMING not in r.text


async def _drive(port: int, target: str, headers: list[dict[str, str]], seconds: float) -> Result:
    """bench/addendums.py's load generator, one connection per headers: a portal session
    each (a person each), as several browsers would be."""
    latencies: list[float] = []
    errors = [0]
    start_at = time.perf_counter()
    requests = []
    for own in headers:
        lines = [f"GET {target} HTTP/1.1", f"Host: {HOST}:{port}"]
        lines += [f"{k}: {v}" for k, v in own.items()]
        requests.append(("\r\n".join(lines) + "\r\n\r\n").encode())
    await asyncio.gather(
        *(_connection(port, r, start_at + seconds, latencies, errors) for r in requests)
    )
    return Result(len(latencies), errors[0], time.perf_counter() - start_at, latencies)


def drive(port: int, target: str, headers: list[dict[str, str]], seconds: float) -> Result:
    try:
        import uvloop

        return uvloop.run(_drive(port, target, headers, seconds))
    except ImportError:
        return asyncio.run(_drive(port, target, headers, seconds))


def server_times(log: Path, start_at: int, end_at: int) -> list[float]:
    """``duration_ms`` of the access-log lines written between the two offsets."""
    times = []
    with open(log, "rb") as f:
        f.seek(start_at)
        chunk = f.read(end_at - start_at)
    for line in chunk.splitlines():
        if b'"duration_ms"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("route") == "/healthz":
            continue
        times.append(float(record["duration_ms"]))
    return times


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * p), len(ordered) - 1)]


@dataclass
class Measured:
    """One target's figures: server time (ms) from the access log, client side too."""

    server: list[float]
    client: Result

    @property
    def p50(self) -> float:
        return statistics.median(self.server) if self.server else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.server, 0.99)


def measure(
    pool: concurrent.futures.Executor,
    port: int,
    log: Path,
    target: str,
    headers: list[dict[str, str]],
    args: argparse.Namespace,
) -> Measured:
    if args.warmup:
        pool.submit(drive, port, target, headers, args.warmup).result()
    time.sleep(0.2)  # the warm-up's last lines written
    start_at = log.stat().st_size
    result = pool.submit(drive, port, target, headers, args.seconds).result()
    time.sleep(0.3)
    return Measured(server_times(log, start_at, log.stat().st_size), result)


def measure_pair(
    pool: concurrent.futures.Executor,
    port: int,
    log: Path,
    targets: tuple[tuple[str, list[dict[str, str]]], tuple[str, list[dict[str, str]]] | None],
    args: argparse.Namespace,
) -> tuple[Measured, Measured | None]:
    """The page and its API operation, measured in turn ``--rounds`` times, each one's
    figures over all its rounds: both are sampled across the same stretch of time, so a
    machine whose load drifts (other work beside the benchmark) weighs on both alike."""
    page, api = targets
    mine: list[Measured] = []
    theirs: list[Measured] = []
    for _ in range(args.rounds):
        mine.append(measure(pool, port, log, *page, args))
        if api is not None:
            theirs.append(measure(pool, port, log, *api, args))
    return _joined(mine), (_joined(theirs) if theirs else None)


def _joined(parts: list[Measured]) -> Measured:
    client = Result(
        sum(p.client.done for p in parts),
        sum(p.client.errors for p in parts),
        sum(p.client.elapsed for p in parts),
        [x for p in parts for x in p.client.latencies],
    )
    return Measured([x for p in parts for x in p.server], client)


def process_tree(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in children:
            found += process_tree(int(child))
    return found


def peak_rss_mb(pid: int) -> float:
    """The largest VmHWM (peak resident memory) of the process and its children."""
    peaks = []
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return max(peaks) if peaks else float("nan")


def stream_csv(base: str, cookie: str) -> tuple[int, float]:
    """Rows of the CSV export of every addendum (header excluded), and seconds taken."""
    rows = -1
    t0 = time.perf_counter()
    with httpx.stream(
        "GET",
        base + CSV_PATH,
        headers={"Cookie": f"portal_session={cookie}"},
        timeout=httpx.Timeout(600, connect=10),
    ) as r:
        if r.status_code != 200:
            raise SystemExit(f"CSV export: {r.status_code}")
        for chunk in r.iter_raw(1 << 16):
            rows += chunk.count(b"\n")
    return rows, time.perf_counter() - t0


def _ms(x: float) -> str:
    return "n/a" if x != x else (f"{x:.1f}" if x < 100 else f"{x:.0f}")


def run(url: str, document: Path | None, args: argparse.Namespace, tmp: Path) -> None:
    name = "postgresql" if url.startswith("postgresql") else "sqlite"
    if document is not None:
        loaded = load(url, document, tmp)
        print(f"{name}: loaded {args.rows} addendums in {loaded:.1f} s", flush=True)
        if name == "postgresql":
            asyncio.run(vacuum(url))
    else:
        migrate(service_env(url, tmp))
    asyncio.run(set_password(url))
    busiest, total = asyncio.run(busiest_client(url))
    print(f"{name}: {total} addendums; busiest client {busiest}", flush=True)
    env = {
        **service_env(url, tmp),
        "CLOUDADMIN_LOG_LEVEL": "INFO",
        "CLOUDADMIN_LOG_FORMAT": "json",
        # One sign-in per run: the session outlives the measurement.
        "CLOUDADMIN_PORTAL_SESSION_IDLE_MINUTES": "600",
    }
    port = free_port()
    log = tmp / f"{name}-serve.log"
    argv = [sys.executable, "-m", "cloudadmin", "serve", "--workers", "1"]
    argv += ["--host", HOST, "--port", str(port)]
    server_cpu = args.pin[0] if args.pin else None
    proc = start(argv, env, log, port, server_cpu)
    base = f"http://{HOST}:{port}"
    rows: list[tuple[str, Measured, Measured | None]] = []
    csv_line = rss_line = ""
    first_p50 = float("nan")
    context = multiprocessing.get_context("spawn")
    try:
        # One session per connection: each request of a session notes its use on the
        # session's row, so one session's requests wait for one another.
        cookies = [sign_in(base) for _ in range(args.connections)]
        cookie = cookies[0]
        portal_headers = [{"Cookie": f"portal_session={c}"} for c in cookies]
        api_headers = [{"Authorization": f"apikey {OPERATOR}"}] * args.connections
        with concurrent.futures.ProcessPoolExecutor(
            1,
            mp_context=context,
            initializer=_pin_load_generator,
            initargs=(args.pin[1] if args.pin else None,),
        ) as pool:
            for label, page, api in PAGES:
                if args.pages and not any(w in label for w in args.pages):
                    continue
                page = page.format(busiest=busiest)
                if not served(base, cookie, page):
                    print(f"{name}: {label}: {page} not served yet; skipped", flush=True)
                    continue
                behind = None if api is None else (api.format(busiest=busiest), api_headers)
                mine, theirs = measure_pair(pool, port, log, ((page, portal_headers), behind), args)
                rows.append((label, mine, theirs))
                if label == FIRST_PAGE:
                    first_p50 = mine.p50
                print(
                    f"{name}: {label}: page p50 {_ms(mine.p50)} ms"
                    + (f", API p50 {_ms(theirs.p50)} ms" if theirs else ""),
                    flush=True,
                )
        if args.csv and served(base, cookie, "/portal/billing"):
            before = peak_rss_mb(proc.pid)
            count, seconds = stream_csv(base, cookie)
            after = peak_rss_mb(proc.pid)
            csv_line = (
                f"{name}: CSV export of {count:,} addendums in {seconds:.1f} s: "
                f"{count / seconds:,.0f} rows/s"
            )
            rss_line = (
                f"{name}: serve peak RSS {before:.0f} MB before the export, {after:.0f} MB after it"
            )
            if count != total:
                csv_line += f" (ERRORS: {total} addendums, {count} rows)"
    finally:
        stop(proc)
    print()
    print(
        f"{name}, {total:,} addendums, {args.connections} connections, "
        f"{args.rounds} x {args.seconds:g} s per target, page and API in turn; "
        "server time from the access log"
    )
    print()
    print(
        "| page | page p50 / p99 ms | API p50 / p99 ms | page ÷ API (p50) "
        "| page req/s | API req/s | page client p50 ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, mine, theirs in rows:
        errors = mine.client.errors + (theirs.client.errors if theirs else 0)
        ratio = f"{mine.p50 / theirs.p50:.2f}" if theirs and theirs.p50 > 0 else "–"
        api_cells = f"{_ms(theirs.p50)} / {_ms(theirs.p99)}" if theirs else "–"
        api_rate = f"{theirs.client.rate:.0f}" if theirs else "–"
        print(
            f"| {label} | {_ms(mine.p50)} / {_ms(mine.p99)} | {api_cells} | {ratio} "
            f"| {mine.client.rate:.0f} | {api_rate} | {_ms(mine.client.percentile(0.5))} |"
            + (f" ERRORS: {errors} not 200" if errors else "")
        )
    print()
    print(f"{name}: addendum browser first page p50 {_ms(first_p50)} ms (target <= 25)")
    if csv_line:
        print(csv_line + " (target >= 50,000)")
        print(rss_line)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per target")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before each target")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument(
        "--rounds", type=int, default=3, help="page and API measured in turn, this many times"
    )
    parser.add_argument(
        "--pin",
        default="0,1",
        help="CPUs for the server and for the load generator (default 0,1; none)",
    )
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--pages", help="only the pages whose label holds one of these words")
    parser.add_argument("--database-url", help="a database loaded before (see --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the loaded database")
    parser.add_argument("--no-csv", dest="csv", action="store_false", help="skip the export")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny run for CI: 2,000 rows, 0.2 s per target, one database",
    )
    args = parser.parse_args()
    base = postgres_base_url() if args.only != "sqlite" else None
    if args.smoke:
        args.rows, args.accounts, args.seconds, args.warmup = 2_000, 200, 0.2, 0.0
        args.rounds = 1
    args.pages = args.pages.split(",") if args.pages else None
    pins = [] if args.pin == "none" or (os.cpu_count() or 1) < 2 else args.pin.split(",")
    args.pin = [int(c) for c in pins] if len(pins) == 2 else None
    print(
        f"cloudadmin under test: {CLOUDADMIN_SRC / 'cloudadmin'}; load "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if args.database_url:
            run(args.database_url, None, args, tmp)
            return
        document = tmp / "addendums.json"
        with open(document, "w", encoding="utf-8") as out:
            write(args.rows, args.accounts, 1, out)
        if base is None or args.only == "sqlite":
            where = Path(tempfile.mkdtemp(prefix="bench-portal-")) if args.keep else tmp
            url = f"sqlite+aiosqlite:///{where}/bench.db"
            run(url, document, args, tmp)
            if args.keep:
                print(f"sqlite: kept; measure it again with --database-url {url}")
            return
        url = asyncio.run(create_pg_database(base))
        try:
            run(url, document, args, tmp)
        finally:
            if args.keep:
                print(f"postgresql: kept; measure it again with --database-url {url}")
            else:
                asyncio.run(drop_pg_database(base, url))


if __name__ == "__main__":
    main()
