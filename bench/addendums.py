"""GET /billing/org/v1/addendums over HTTP: the service against two kinds of peer.

For SQLite and (when it answers) a fresh PostgreSQL database:

1. writes a load document with N addendums over 10,000 accounts (bench/gen_addendums.py)
   and loads it with ``cloudadmin load`` (then VACUUM ANALYZE on PostgreSQL), or takes
   a database loaded before (``--database-url``, kept by an earlier ``--keep`` run; it
   is first brought to the schema of the code under test with ``cloudadmin migrate``);
2. runs the app in-process once per query of the mix, recording the SQL the service
   issues (as sent to the driver) and its answers;
3. starts ``cloudadmin serve --workers 1`` on a free loopback port and drives it over
   HTTP/1.1 keep-alive with a load generator in a separate process (raw asyncio
   streams on uvloop), for a fixed duration at 8 connections and at saturation (64);
   the server is pinned to one CPU and the load generator to the other (``--pin``);
4. does the same against the peers, one after the other:
   - the same-SQL ceiling, bench/raw_addendums_app.py (bare ASGI on uvicorn, asyncpg /
     sqlite3 issuing exactly the recorded statements): ``raw read``, the count and the
     page only, and ``raw all``, every statement of the service's request (API key
     lookup, count, page and the activity-log INSERT, each committed on its own);
     ``raw nolog`` (``--raw all,nolog``) is raw all without the INSERT;
   - the obvious SQL, bench/obvious_addendums_app.py (PostgreSQL only; "n/a" on
     SQLite): one key lookup, an exact ``COUNT(*)`` with only the joins its filters
     need, the page ordered by the fields then id with LIMIT/OFFSET, no log row;
     ``obvious+log`` (``--obvious plain,log``) adds one log INSERT committed per
     request, which prices the service's per-GET log write. Before it is measured, its
     answers are checked equal to the service's on the mix and on every filter and
     ordering (``--no-check`` skips that);
   - with ``--before SRC=URL`` (PostgreSQL), ``before``: the service of another tree
     (SRC, its src/ directory) against its own copy of the database (URL, at that
     code's schema; ``CREATE DATABASE copy TEMPLATE loaded``, then the later
     migrations undone), measured in the same rounds: before and after at one hour;
5. prints requests/s, p50 and p99 per query for each app (the median of ``--rounds``),
   then a Markdown table: the service's req/s, p50, p99, each peer's req/s and the
   service's throughput as a share of it (cloudadmin / same-SQL ceiling, cloudadmin /
   obvious SQL). ``/healthz`` of each app is the framework reference.

The service measured is the ``cloudadmin`` package the invoking interpreter imports
(PYTHONPATH first, then the installed one), never one found from this file's location:
its directory goes first on the path of every ``cloudadmin`` process the benchmark
starts, and the first line printed names it. So another tree's code is measured with

    PYTHONPATH=<that tree>/src .venv/bin/python bench/addendums.py --database-url ...

The operator's API key comes from the document (``1_bench-operator``).

    .venv/bin/python bench/addendums.py                       # 1,000,000 addendums, 5 s
    .venv/bin/python bench/addendums.py --only postgresql --keep   # prints the kept URL
    .venv/bin/python bench/addendums.py --database-url postgresql+asyncpg://.../db \\
        --rounds 3 --obvious plain,log         # no reload: the median of three rounds
    .venv/bin/python bench/addendums.py --rows 200000 --seconds 3 --only postgresql
    .venv/bin/python bench/addendums.py --queries client,company --raw all --obvious plain
    .venv/bin/python bench/addendums.py --smoke               # seconds; used by CI

Flags: --rows, --accounts (the document); --seconds, --warmup, --connections, --rounds
(the measurement); --raw read,all,nolog|none, --obvious plain,log|none, --no-check (the
peers); --pin SERVER_CPU,LOAD_CPU|none; --only sqlite|postgresql; --queries WORDS;
--database-url URL, --keep (reuse a loaded database); --before SRC=URL (another tree's
service in the same rounds, on its own copy of the database); --json FILE (the figures
of the Markdown table, per database: its addendums, the load's seconds, the counts, and
req/s, p50 and p99 per app, query and connection count; bench/cost_curve.py reads it);
--smoke.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import pickle
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
from gen_addendums import write  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

import cloudadmin  # noqa: E402

# The directory holding the cloudadmin package this interpreter imports (see above).
CLOUDADMIN_SRC = Path(cloudadmin.__file__).resolve().parent.parent

HOST = "127.0.0.1"
PATH = "/billing/org/v1/addendums"
OPERATOR = "1_bench-operator"
SECRET_KEY = "bench-addendums"


# --- the load generator (runs in its own process) ---


@dataclass
class Result:
    done: int
    errors: int
    elapsed: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(int(len(ordered) * p), len(ordered) - 1)] * 1000


async def _connection(
    port: int, request: bytes, deadline: float, latencies: list[float], errors: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        # Each connection sends its first request whatever the hour: however short the
        # measurement (--smoke), every one has been answered at least once.
        first = True
        while True:
            t0 = time.perf_counter()
            if t0 >= deadline and not first:
                return
            first = False
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                elif name.strip().lower() == b"transfer-encoding":
                    raise RuntimeError("chunked responses are not supported")
            if length:
                await reader.readexactly(length)
            latencies.append(time.perf_counter() - t0)
            if head[9:12] != b"200":
                errors[0] += 1
    finally:
        writer.close()


async def _drive(
    port: int, target: str, headers: dict[str, str], connections: int, seconds: float
) -> Result:
    lines = [f"GET {target} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    latencies: list[float] = []
    errors = [0]
    start = time.perf_counter()
    await asyncio.gather(
        *(
            _connection(port, request, start + seconds, latencies, errors)
            for _ in range(connections)
        )
    )
    return Result(len(latencies), errors[0], time.perf_counter() - start, latencies)


def drive(
    port: int, target: str, headers: dict[str, str], connections: int, seconds: float
) -> Result:
    try:
        import uvloop

        return uvloop.run(_drive(port, target, headers, connections, seconds))
    except ImportError:
        return asyncio.run(_drive(port, target, headers, connections, seconds))


# --- the query mix and the SQL the service issues for it ---


# A small client: the one whose addendum count is nearest this (issue 17's example),
# where the service's per-request overhead weighs most against the obvious SQL.
SMALL_CLIENT_ROWS = 9_129


def mix(rows: int, busiest: int, small: int) -> list[tuple[str, str]]:
    """(label, query string) of the measured queries, all as the operator. ``--queries``
    matches words inside labels: ``client`` selects both by-client queries, ``busiest``
    or ``9k`` one of them."""
    deep = min(100_000, rows // 10)
    return [
        ("no filter", ""),
        ("no filter, limit 100", "limit=100"),
        ("by client (busiest)", f"client_id={busiest}"),
        ("by client (~9k rows)", f"client_id={small}"),
        ("status+product", "status=active&product_id=1"),
        ("company_name search", "company_name=nordic%20m%C3%BCller"),
        ("created in a month", "created_after=2022-01-01&created_before=2022-02-01"),
        ("ordering -created_at", "ordering=-created_at,client_id"),
        ("plan_name search", "plan_name=gr%C3%B6sse"),
        (f"deep offset {deep}", f"offset={deep}"),
    ]


# Every filter and ordering once more (the obvious peer's answers are checked against the
# service's on them, as the operator, and a few as a reseller and an account).
CHECKED = [
    "limit=7&offset=30",
    "payer_id=null",
    "reseller_id=null",
    "reseller_id=2&reseller_id=3",
    "provider_id=2",
    "plan_id=101&plan_id=502",
    "product_id=1&product_id=5",
    "currency_id=2",
    "currency_char_code=EUR",
    "product_internal_name=CDN",
    "status=active&status=paused",
    "company_name=STRASSE",
    "company_name=caf%C3%A9&ordering=client_id",
    "product_name=CLOUD",
    "created_on=2021-03-04",
    "active_at=2022-06-01T00:00:00Z&limit=50",
    "not_active_at=2022-06-01T00:00:00Z",
    "active_after=2024-01-01",
    "active_before=2020-01-01",
    "active_start_from=2023-01-01T00:00:00Z",
    "active_start_to=2020-01-01T00:00:00Z",
    "active_end_from=2023-01-01T00:00:00Z",
    "active_end_to=2023-01-01T00:00:00Z",
    "ordering=plan_name",
    "ordering=-id",
    "ordering=-product_name,active_range_end&limit=50",
    "ordering=-active_range_end",
    "ordering=product_id,-plan_id,active_range_start",
    "id=5",
    "addendum_id=5&addendum_id=9",
    "offset=1990&limit=20",
    "offset=5000",
]
CHECKED_AS = {
    "2_bench-reseller": ["", "status=active&offset=25"],
    "3_bench-client": ["", "ordering=-created_at"],
}


@dataclass
class Recorded:
    queries: list[tuple[str, str]]  # (label, query string) of the mix
    statements: dict[str, Any]  # query string -> the statements the service sent
    counts: dict[str, int]
    answers: dict[tuple[str, str], Any]  # (key, query string) -> the service's JSON
    rows: int


async def record_sql(url: str, tmp: Path, check: bool) -> Recorded:
    """The mix, the statements the service issues per query string, its answers."""
    from sqlalchemy import event, text

    from cloudadmin.app import create_app
    from cloudadmin.config import Settings
    from cloudadmin.web.app_state import app_state

    app = create_app(Settings(database_url=url, secret_key=SECRET_KEY, data_dir=tmp))
    engine = app_state(app).engine
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT count(*) FROM addendums"))).scalar_one()
        busiest = (
            await conn.execute(
                text(
                    "SELECT client_id FROM addendums GROUP BY client_id ORDER BY count(*) DESC, "
                    "client_id LIMIT 1"
                )
            )
        ).scalar_one()
        small = (
            await conn.execute(
                text(
                    "SELECT client_id FROM addendums GROUP BY client_id "
                    "ORDER BY abs(count(*) - :rows), client_id LIMIT 1"
                ),
                {"rows": SMALL_CLIENT_ROWS},
            )
        ).scalar_one()
    captured: list[tuple[str, str, Any]] = []

    def on_execute(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        params = tuple(parameters) if isinstance(parameters, list) else parameters
        captured.append((classify(statement), statement, pickle.loads(pickle.dumps(params))))

    event.listen(engine.sync_engine, "before_cursor_execute", on_execute)
    # Reads send their statements straight to the driver (src/cloudadmin/db/driver.py):
    # recorded there, exactly as sent.
    from cloudadmin.db import driver

    run_on_driver = getattr(driver, "_run_on_driver", None)

    async def recording(conn: Any, sql: str, args: list[Any]) -> list[Any]:
        captured.append((classify(sql), sql, pickle.loads(pickle.dumps(tuple(args)))))
        return await run_on_driver(conn, sql, args)  # type: ignore[misc]

    if run_on_driver is not None:
        driver._run_on_driver = recording  # type: ignore[attr-defined]
    else:
        print(
            "note: cloudadmin.db.driver._run_on_driver is gone: the raw apps replay only "
            "the statements SQLAlchemy's events saw",
            flush=True,
        )
    queries = mix(rows, busiest, small)
    statements: dict[str, Any] = {}
    counts: dict[str, int] = {}
    answers: dict[tuple[str, str], Any] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for label, query in queries:
            captured.clear()
            r = await client.get(
                PATH + (f"?{query}" if query else ""),
                headers={"Authorization": f"apikey {OPERATOR}"},
            )
            if r.status_code != 200:
                raise SystemExit(f"{label}: {r.status_code} {r.text}")
            answers[OPERATOR, query] = r.json()
            counts[query] = r.json()["count"]
            kinds = [kind for kind, _, _ in captured]
            if kinds.count("count") != 1 or kinds.count("page") > 1:
                print(
                    f"note: {label}: the service sent {kinds}; the raw apps replay them as "
                    "they are (count = the first count statement's value)",
                    flush=True,
                )
            statements[query] = list(captured)
        if run_on_driver is not None:
            driver._run_on_driver = run_on_driver  # type: ignore[attr-defined]
        event.remove(engine.sync_engine, "before_cursor_execute", on_execute)
        checked = [(OPERATOR, q) for q in CHECKED] if check else []
        checked += [(key, q) for key, qs in CHECKED_AS.items() for q in qs] if check else []
        for key, query in checked:
            r = await client.get(
                PATH + (f"?{query}" if query else ""), headers={"Authorization": f"apikey {key}"}
            )
            if r.status_code != 200:
                raise SystemExit(f"{key} {query}: {r.status_code} {r.text}")
            answers[key, query] = r.json()
    await engine.dispose()
    return Recorded(queries, statements, counts, answers, rows)


def classify(statement: str) -> str:
    """What a statement of the list request is: begin, write, count, page or other."""
    head = statement.lstrip().upper()
    if head.startswith("BEGIN"):
        return "begin"
    if head.startswith(("INSERT", "UPDATE", "DELETE")):
        return "write"
    if "addendum" not in statement.lower():
        return "other"  # the API key and its user
    select_list = head.partition(" FROM ")[0]
    return "count" if "COUNT(" in select_list or "SUM(" in select_list else "page"


def _comparable(answer: Any) -> Any:
    """An answer with its links reduced to their query parameters (the hosts differ)."""
    out = dict(answer)
    for name in ("next", "previous"):
        if out.get(name):
            parts = urlsplit(out[name])
            out[name] = (parts.path, sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return out


def check_answers(name: str, port: int, answers: dict[tuple[str, str], Any]) -> None:
    """The obvious peer answers what the service answered, query by query."""
    wrong = []
    with httpx.Client(base_url=f"http://{HOST}:{port}", timeout=120) as client:
        for (key, query), expected in answers.items():
            r = client.get(
                PATH + (f"?{query}" if query else ""), headers={"Authorization": f"apikey {key}"}
            )
            if r.status_code != 200 or _comparable(r.json()) != _comparable(expected):
                got = r.json() if r.status_code == 200 else r.text
                wrong.append(
                    f"{key} ?{query}: {r.status_code}, count "
                    f"{got.get('count') if isinstance(got, dict) else got} against "
                    f"{expected['count']}"
                )
    if wrong:
        raise SystemExit(
            f"{name}: the obvious peer's answers differ from the service's:\n" + "\n".join(wrong)
        )
    print(f"{name}: the obvious peer answered as the service on {len(answers)} queries", flush=True)


# --- processes ---


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _pinned(cpu: int | None) -> Any:
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def start(
    argv: list[str], env: dict[str, str], log: Path, port: int, cpu: int | None = None
) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, preexec_fn=_pinned(cpu)
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{argv[2:4]} exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://{HOST}:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop(proc)
    raise SystemExit(f"{argv[2:4]} did not answer:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def service_env(url: str, tmp: Path, src: Path = CLOUDADMIN_SRC) -> dict[str, str]:
    # The cloudadmin this interpreter imports (PYTHONPATH, then the installed one) is the
    # one measured: its directory goes first on the children's path, whatever their cwd.
    # (--before measures another tree's src/ the same way.)
    path = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "CLOUDADMIN_DATABASE_URL": url,
        "CLOUDADMIN_SECRET_KEY": SECRET_KEY,
        "CLOUDADMIN_DATA_DIR": str(tmp),
        "CLOUDADMIN_RUN_DISPATCHER": "false",
        "CLOUDADMIN_LOG_LEVEL": "WARNING",
    }


def before_env(before: str, tmp: Path) -> dict[str, str]:
    """The environment of the service of another tree (``--before SRC=URL``): its src/
    first on the path, its own copy of the database (at that code's schema, which may be
    older than this one's), its own data directory."""
    src, _, url = before.partition("=")
    data = tmp / "before"
    data.mkdir(exist_ok=True)
    env = service_env(url, data, Path(src).resolve())
    migrate(env)
    return env


def migrate(env: dict[str, str]) -> None:
    """``cloudadmin migrate`` of the code and database ``env`` names."""
    subprocess.run(
        [sys.executable, "-m", "cloudadmin", "migrate"],
        env=env,
        check=True,
        capture_output=True,
        cwd=ROOT,
    )


def load(url: str, document: Path, tmp: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cloudadmin", "load", str(document)],
        env=service_env(url, tmp),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"cloudadmin load failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - t0


async def vacuum(url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


# --- one database ---


def _pin_load_generator(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def measure_app(
    pool: concurrent.futures.Executor,
    port: int,
    targets: list[tuple[str, str]],
    levels: list[int],
    seconds: float,
    headers: dict[str, str],
    warmup: float,
) -> dict[tuple[str, int], Result]:
    out: dict[tuple[str, int], Result] = {}
    for label, target in targets:
        if warmup:
            pool.submit(drive, port, target, headers, levels[0], warmup).result()
        for n in levels:
            out[label, n] = pool.submit(drive, port, target, headers, n, seconds).result()
    return out


@dataclass
class Point:
    """The median of a measurement's rounds: req/s, p50 and p99 (ms), non-200 answers."""

    rate: float
    p50: float
    p99: float
    errors: int


def median_point(rounds: list[Result]) -> Point:
    return Point(
        statistics.median(r.rate for r in rounds),
        statistics.median(r.percentile(0.5) for r in rounds),
        statistics.median(r.percentile(0.99) for r in rounds),
        sum(r.errors for r in rounds),
    )


def _fmt(x: float) -> str:
    if x != x:  # nan
        return "n/a"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def report(
    name: str,
    targets: list[tuple[str, str]],
    levels: list[int],
    results: dict[str, dict[tuple[str, int], list[Result]]],
    counts: dict[str, int],
    peers: list[str],
) -> None:
    """Per app and query: req/s p50 p99 and the service's ratio to it (detail lines), then
    the summary as a Markdown table."""
    apps = list(results)
    points = {app: {k: median_point(v) for k, v in results[app].items()} for app in apps}
    head = f"{name}: {'query':<22} {'conns':>5}"
    for app in apps:
        head += f" | {app:>12} req/s {'p50':>6} {'p99':>7}"
        if app != "service":
            head += " ratio"
    print(head + " | count", flush=True)
    for label, target in targets:
        query = target.partition("?")[2]
        for n in levels:
            s = points["service"][label, n]
            line = f"{name}: {label:<22} {n:>5}"
            errors = []
            for app in apps:
                r = points[app][label, n]
                line += f" | {r.rate:18.0f} {r.p50:6.2f} {r.p99:7.2f}"
                if app != "service":
                    line += f" {s.rate / r.rate if r.rate else 0:5.2f}"
                if r.errors:
                    errors.append(f"{app} {r.errors} non-200")
            count = counts.get(query, "") if target.startswith(PATH) else ""
            print(
                f"{line} | {count}{'  ERRORS ' + ', '.join(errors) if errors else ''}", flush=True
            )
    rounds = len(next(iter(results["service"].values())))
    print(
        f"{name}: p50/p99 in ms, the median of {rounds} round(s); ratio = service req/s / "
        "that app's req/s; raw read = the service's count + page statements only, raw all "
        "= every statement of the service's request (the same-SQL ceiling), raw nolog = raw all "
        "without the log INSERT, obvious = "
        "bench/obvious_addendums_app.py, obvious+log = the same with one activity-log "
        "INSERT committed per request",
        flush=True,
    )
    # The summary: every peer named in the columns, "n/a" where it did not run.
    # The code before a change (--before) shows its latencies too.
    latencies = {"before"}
    cols = "".join(
        f" {peer} req/s |"
        + (f" {peer} p50 | {peer} p99 |" if peer in latencies else "")
        + f" ÷ {peer} |"
        for peer in peers
    )
    print(f"\n| query | conns | cloudadmin req/s | p50 ms | p99 ms |{cols} count |")
    width = sum(4 if peer in latencies else 2 for peer in peers)
    print("|---|---|---|---|---|" + "---|" * width + "---|")
    for label, target in targets:
        query = target.partition("?")[2]
        count = counts.get(query) if target.startswith(PATH) else None
        for n in levels:
            s = points["service"][label, n]
            line = f"| {label} | {n} | {_fmt(s.rate)} | {_fmt(s.p50)} | {_fmt(s.p99)} |"
            for peer in peers:
                r = points[peer].get((label, n)) if peer in points else None
                if r is None or not r.rate:
                    line += " n/a |" * (4 if peer in latencies else 2)
                else:
                    line += f" {_fmt(r.rate)} |"
                    if peer in latencies:
                        line += f" {_fmt(r.p50)} | {_fmt(r.p99)} |"
                    line += f" {s.rate / r.rate:.2f}× |"
            print(f"{line} {f'{count:,}' if count is not None else ''} |", flush=True)
    print(flush=True)


def _number(x: float) -> float | None:
    return None if x != x else x  # nan: null in the JSON


def summary(
    name: str,
    rows: int,
    loaded: float | None,
    targets: list[tuple[str, str]],
    counts: dict[str, int],
    results: dict[str, dict[tuple[str, int], list[Result]]],
) -> dict[str, Any]:
    """One database's run for ``--json``: the medians the Markdown table shows."""
    return {
        "database": name,
        "addendums": rows,
        "load_seconds": loaded,  # None: a database loaded before (--database-url)
        "counts": {
            label: counts[target.partition("?")[2]]
            for label, target in targets
            if target.startswith(PATH) and target.partition("?")[2] in counts
        },
        "points": [
            {
                "app": app,
                "query": label,
                "connections": n,
                "req_s": _number(point.rate),
                "p50_ms": _number(point.p50),
                "p99_ms": _number(point.p99),
                "errors": point.errors,
            }
            for app, measured in results.items()
            for (label, n), rounds in measured.items()
            for point in [median_point(rounds)]
        ],
    }


def run_database(
    name: str,
    url: str,
    document: Path | None,
    args: argparse.Namespace,
    pool: concurrent.futures.Executor,
    tmp: Path,
) -> dict[str, Any]:
    loaded = None
    if document is not None:
        loaded = load(url, document, tmp)
        print(
            f"{name}: loaded {args.rows} addendums with `cloudadmin load` in {loaded:.1f} s",
            flush=True,
        )
        if url.startswith("postgresql"):
            asyncio.run(vacuum(url))
    else:
        # Brought up to this code's schema first: the SQL is recorded before serve starts.
        migrate(service_env(url, tmp))
    postgres = url.startswith("postgresql")
    obvious = args.obvious if postgres else []
    recorded = asyncio.run(record_sql(url, tmp, check=bool(obvious) and args.check))
    if document is None:
        print(f"{name}: using the loaded database as it is ({recorded.rows} addendums)", flush=True)
    queries = recorded.queries
    if args.queries:
        words = args.queries.split(",")
        queries = [(label, q) for label, q in queries if any(w in label for w in words)]
    sql_file = tmp / f"{name}-sql.pickle"
    sql_file.write_bytes(pickle.dumps(recorded.statements))
    targets = [("/healthz", "/healthz")]
    targets += [(label, PATH + (f"?{q}" if q else "")) for label, q in queries]
    headers = {"Authorization": f"apikey {OPERATOR}"}
    levels = args.connections
    server_cpu = args.pin[0] if args.pin else None

    listen = ["--workers", "1", "--host", HOST, "--port", "{port}"]
    serve = [sys.executable, "-m", "cloudadmin", "serve", *listen]
    apps: dict[str, tuple[list[str], dict[str, str]]] = {"service": (serve, service_env(url, tmp))}
    if args.before and postgres:
        apps["before"] = (serve, before_env(args.before, tmp))
    uvicorn = [sys.executable, "-m", "uvicorn", "--app-dir", str(BENCH), *listen]
    uvicorn += ["--log-level", "warning", "--no-access-log"]
    for mode in args.raw:
        apps[f"raw {mode}"] = (
            uvicorn + ["raw_addendums_app:app"],
            {
                **os.environ,
                "RAW_ADDENDUMS_DATABASE_URL": url,
                "RAW_ADDENDUMS_SQL": str(sql_file),
                "RAW_ADDENDUMS_MODE": mode,
            },
        )
    for mode in obvious:
        apps["obvious" + ("+log" if mode == "log" else "")] = (
            uvicorn + ["obvious_addendums_app:app"],
            {
                **os.environ,
                "OBVIOUS_ADDENDUMS_DATABASE_URL": url,
                "OBVIOUS_ADDENDUMS_LOG": "1" if mode == "log" else "0",
            },
        )

    results: dict[str, dict[tuple[str, int], list[Result]]] = {app: {} for app in apps}
    for round_ in range(args.rounds):
        if args.rounds > 1:
            print(
                f"{name}: round {round_ + 1} of {args.rounds}, load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        for app, (argv, env) in apps.items():
            port = free_port()
            proc = start(
                [a.replace("{port}", str(port)) for a in argv],
                env,
                tmp / f"{name}-{app.replace(' ', '-')}.log",
                port,
                server_cpu,
            )
            try:
                if app == "obvious" and round_ == 0 and args.check:
                    check_answers(name, port, recorded.answers)
                got = measure_app(pool, port, targets, levels, args.seconds, headers, args.warmup)
            finally:
                stop(proc)
            for key, result in got.items():
                results[app].setdefault(key, []).append(result)
    peers = [f"raw {m}" for m in ("read", "nolog", "all")] + ["obvious", "obvious+log"]
    peers = [p for p in peers if p in results or p in ("raw all", "obvious")]
    if "before" in results:
        peers.insert(0, "before")
    report(name, targets, levels, results, recorded.counts, peers)
    return summary(name, recorded.rows, loaded, targets, recorded.counts, results)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument(
        "--connections",
        default="8,64",
        help="concurrent connections, comma-separated (default 8,64)",
    )
    parser.add_argument(
        "--warmup", type=float, default=0.5, help="seconds of load before each query's measurements"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every app this many times, one after the other, and "
        "report the medians (default 1)",
    )
    parser.add_argument(
        "--raw",
        help="same-SQL apps to measure, comma-separated: read, "
        "all, nolog (all but the log INSERT) (default read,all; "
        "read with --smoke; none)",
    )
    parser.add_argument(
        "--obvious",
        help="obvious-SQL peers to measure on PostgreSQL: plain, "
        "log (one activity-log INSERT committed per "
        "request) or plain,log (default plain; none)",
    )
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip checking the obvious peer's answers against the "
        "service's (the mix plus every filter and ordering)",
    )
    parser.add_argument(
        "--pin",
        default="0,1",
        help="CPUs for the server under test and for the load generator "
        "(default 0,1; none: no pinning; ignored with fewer than 2 CPUs)",
    )
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument(
        "--queries",
        help="measure only the queries whose label contains one "
        "of these words, comma-separated (e.g. created,client)",
    )
    parser.add_argument(
        "--database-url",
        help="measure a database already loaded with this benchmark's "
        "document (see --keep) instead of loading one",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database loaded by this run (PostgreSQL: not dropped; "
        "SQLite: a file outside the run's temporary directory) and print "
        "its URL, for --database-url",
    )
    parser.add_argument(
        "--before",
        metavar="SRC=URL",
        help="PostgreSQL: also measure, in the same rounds, the service of another tree "
        "(its src/ directory) against its own copy of the loaded database (at that code's "
        "schema): a before/after comparison at the same hour",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny run for CI: 2,000 rows, 0.1 s per measurement, raw read "
        "and obvious only, one database (PostgreSQL when it answers, "
        "else SQLite)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        type=Path,
        help="also write the figures of each database's Markdown table to FILE: "
        "the addendums, the load's seconds (null with --database-url), the count per "
        "query, and req/s, p50 and p99 per app, query and connection count",
    )
    args = parser.parse_args()
    base = postgres_base_url() if args.only != "sqlite" else None
    if args.smoke:
        args.rows, args.accounts, args.seconds, args.warmup = 2_000, 200, 0.1, 0.0
        args.raw = args.raw or "read"
        args.only = args.only or ("postgresql" if base else "sqlite")
    args.connections = [int(n) for n in args.connections.split(",")]
    args.raw = [m for m in (args.raw or "read,all").split(",") if m and m != "none"]
    if not set(args.raw) <= {"read", "all", "nolog"}:
        parser.error("--raw takes read, all, nolog (comma-separated) or none")
    args.obvious = [m for m in (args.obvious or "plain").split(",") if m and m != "none"]
    if not set(args.obvious) <= {"plain", "log"}:
        parser.error("--obvious takes plain, log, plain,log or none")
    if args.check and "plain" not in args.obvious and args.obvious:
        args.obvious.insert(0, "plain")  # the check runs against the plain peer
    pins = [] if args.pin == "none" or (os.cpu_count() or 1) < 2 else args.pin.split(",")
    args.pin = [int(c) for c in pins] if len(pins) == 2 else None
    print(
        f"cloudadmin under test: {CLOUDADMIN_SRC / 'cloudadmin'}; load "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; server "
        f"on CPU {args.pin[0]}, load generator on CPU {args.pin[1]}"
        if args.pin
        else f"cloudadmin under test: {CLOUDADMIN_SRC / 'cloudadmin'}; load "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
        "no pinning",
        flush=True,
    )
    context = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory() as tmpdir,
        concurrent.futures.ProcessPoolExecutor(
            1,
            mp_context=context,
            initializer=_pin_load_generator,
            initargs=(args.pin[1] if args.pin else None,),
        ) as pool,
    ):
        runs = run_databases(args, base, pool, Path(tmpdir))
    if args.json:
        args.json.write_text(
            json.dumps({"cloudadmin": str(CLOUDADMIN_SRC / "cloudadmin"), "databases": runs})
            + "\n",
            encoding="utf-8",
        )


def run_databases(
    args: argparse.Namespace,
    base: str | None,
    pool: concurrent.futures.Executor,
    tmp: Path,
) -> list[dict[str, Any]]:
    """Loads and measures each database of the run; what each returned, for ``--json``."""
    runs: list[dict[str, Any]] = []
    if args.database_url:
        name = "sqlite" if args.database_url.startswith("sqlite") else "postgresql"
        runs.append(run_database(name, args.database_url, None, args, pool, tmp))
        return runs
    document = tmp / "addendums.json"
    t0 = time.perf_counter()
    with open(document, "w", encoding="utf-8") as out:
        write(args.rows, args.accounts, 1, out)
    print(
        f"generated {args.rows} addendums over {args.accounts} accounts in "
        f"{time.perf_counter() - t0:.1f} s; {args.seconds:g} s per measurement, "
        f"connections {args.connections}; load generator in its own process",
        flush=True,
    )
    if args.only != "postgresql":
        (tmp / "sqlite").mkdir()
        where = Path(tempfile.mkdtemp(prefix="bench-addendums-")) if args.keep else tmp
        sqlite_url = f"sqlite+aiosqlite:///{where}/bench.db"
        runs.append(run_database("sqlite", sqlite_url, document, args, pool, tmp / "sqlite"))
        if args.keep:
            print(f"sqlite: kept; measure it again with --database-url {sqlite_url}", flush=True)
    if args.only == "sqlite":
        return runs
    if base is None:
        print("postgresql: not reachable, skipped", flush=True)
        return runs
    url = asyncio.run(create_pg_database(base))
    try:
        (tmp / "postgresql").mkdir()
        runs.append(run_database("postgresql", url, document, args, pool, tmp / "postgresql"))
    finally:
        if args.keep:
            print(f"postgresql: kept; measure it again with --database-url {url}", flush=True)
        else:
            asyncio.run(drop_pg_database(base, url))
    return runs


if __name__ == "__main__":
    main()
