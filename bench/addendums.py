"""GET /billing/org/v1/addendums over HTTP: the service against its data-path ceiling.

For SQLite and (when it answers) a fresh PostgreSQL database:

1. writes a load document with N addendums over 10,000 accounts (bench/gen_addendums.py)
   and loads it with ``cloudadmin load`` (then VACUUM ANALYZE on PostgreSQL);
2. records the SQL the service issues for each query of the mix (the count and the
   page, as sent to the driver, running the app in-process once);
3. starts ``cloudadmin serve --workers 1`` on a free loopback port and drives it over
   HTTP/1.1 keep-alive with a load generator in a separate process (raw asyncio
   streams on uvloop), for a fixed duration at 8 connections and at saturation (64);
4. does the same against bench/raw_addendums_app.py (bare ASGI on uvicorn, one worker,
   asyncpg / sqlite3 issuing exactly the recorded statements), in two modes: ``read``,
   the count and the page only, and ``all``, every statement of the service's request
   (API key lookup, count, page and the activity log INSERT, each committed on its
   own as the service runs a read): the data-path ceiling of the issue;
5. prints requests/s, p50 and p99 per query for each, and the service's throughput as
   a share of each ceiling. ``/healthz`` of each app is the framework reference.

The operator's API key comes from the document (``1_bench-operator``).

    .venv/bin/python bench/addendums.py                       # 1,000,000 addendums, 5 s
    .venv/bin/python bench/addendums.py --rows 200000 --seconds 3 --only postgresql
    .venv/bin/python bench/addendums.py --smoke               # seconds; used by CI
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import multiprocessing
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
from gen_addendums import write  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

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


async def _connection(port: int, request: bytes, deadline: float, latencies: list[float],
                      errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        while True:
            t0 = time.perf_counter()
            if t0 >= deadline:
                return
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


async def _drive(port: int, target: str, headers: dict[str, str], connections: int,
                 seconds: float) -> Result:
    lines = [f"GET {target} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    latencies: list[float] = []
    errors = [0]
    start = time.perf_counter()
    await asyncio.gather(*(_connection(port, request, start + seconds, latencies, errors)
                           for _ in range(connections)))
    return Result(len(latencies), errors[0], time.perf_counter() - start, latencies)


def drive(port: int, target: str, headers: dict[str, str], connections: int,
          seconds: float) -> Result:
    try:
        import uvloop

        return uvloop.run(_drive(port, target, headers, connections, seconds))
    except ImportError:
        return asyncio.run(_drive(port, target, headers, connections, seconds))


# --- the query mix and the SQL the service issues for it ---


def mix(rows: int, client_id: int) -> list[tuple[str, str]]:
    """(label, query string) of the measured queries, all as the operator."""
    deep = min(100_000, rows // 10)
    return [
        ("no filter", ""),
        ("by client", f"client_id={client_id}"),
        ("status+product", "status=active&product_id=1"),
        ("created in a month", "created_after=2022-01-01&created_before=2022-02-01"),
        ("plan_name search", "plan_name=gr%C3%B6sse"),
        (f"deep offset {deep}", f"offset={deep}"),
    ]


async def record_sql(url: str, tmp: Path, rows: int) -> tuple[list[tuple[str, str]],
                                                               dict[str, Any], dict[str, int]]:
    """The mix, the statements the service issues per query string, and the counts."""
    from sqlalchemy import event, text

    from cloudadmin.app import create_app
    from cloudadmin.auth.app_state import app_state
    from cloudadmin.config import Settings

    app = create_app(Settings(database_url=url, secret_key=SECRET_KEY, data_dir=tmp))
    engine = app_state(app).engine
    async with engine.connect() as conn:
        client_id = (await conn.execute(text("SELECT client_id FROM addendums WHERE id = :i"),
                                        {"i": max(rows // 2, 1)})).scalar_one()
    captured: list[tuple[str, str, Any]] = []

    def on_execute(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        params = tuple(parameters) if isinstance(parameters, list) else parameters
        captured.append((classify(statement), statement, pickle.loads(pickle.dumps(params))))

    event.listen(engine.sync_engine, "before_cursor_execute", on_execute)
    # Reads send their statements straight to the driver (src/cloudadmin/db/driver.py):
    # recorded there, exactly as sent.
    from cloudadmin.db import driver

    run_on_driver = driver._run_on_driver

    async def recording(conn: Any, sql: str, args: list[Any]) -> list[Any]:
        captured.append((classify(sql), sql, pickle.loads(pickle.dumps(tuple(args)))))
        return await run_on_driver(conn, sql, args)

    driver._run_on_driver = recording  # type: ignore[assignment]
    queries = mix(rows, client_id)
    statements: dict[str, Any] = {}
    counts: dict[str, int] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench",
                                 headers={"Authorization": f"apikey {OPERATOR}"}) as client:
        for label, query in queries:
            captured.clear()
            r = await client.get(PATH + (f"?{query}" if query else ""))
            if r.status_code != 200:
                raise SystemExit(f"{label}: {r.status_code} {r.text}")
            counts[query] = r.json()["count"]
            kinds = [kind for kind, _, _ in captured]
            if kinds.count("count") != 1 or kinds.count("page") > 1:
                raise SystemExit(f"{label}: unexpected statements {kinds}")
            statements[query] = list(captured)
    event.remove(engine.sync_engine, "before_cursor_execute", on_execute)
    driver._run_on_driver = run_on_driver  # type: ignore[assignment]
    await engine.dispose()
    return queries, statements, counts


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


# --- processes ---


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def start(argv: list[str], env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                cwd=ROOT)
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


def service_env(url: str, tmp: Path) -> dict[str, str]:
    return {**os.environ, "CLOUDADMIN_DATABASE_URL": url, "CLOUDADMIN_SECRET_KEY": SECRET_KEY,
            "CLOUDADMIN_DATA_DIR": str(tmp), "CLOUDADMIN_RUN_DISPATCHER": "false",
            "CLOUDADMIN_LOG_LEVEL": "WARNING"}


def load(url: str, document: Path, tmp: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cloudadmin", "load", str(document)],
                          env=service_env(url, tmp), capture_output=True, text=True, cwd=ROOT)
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


def measure_app(pool: concurrent.futures.Executor, port: int, targets: list[tuple[str, str]],
                levels: list[int], seconds: float, headers: dict[str, str], warmup: float
                ) -> dict[tuple[str, int], Result]:
    out: dict[tuple[str, int], Result] = {}
    for label, target in targets:
        if warmup:
            pool.submit(drive, port, target, headers, levels[0], warmup).result()
        for n in levels:
            out[label, n] = pool.submit(drive, port, target, headers, n, seconds).result()
    return out


def report(name: str, targets: list[tuple[str, str]], levels: list[int],
           results: dict[str, dict[tuple[str, int], Result]], counts: dict[str, int]) -> None:
    apps = list(results)
    head = f"{name}: {'query':<22} {'conns':>5}"
    for app in apps:
        head += f" | {app:>9} req/s {'p50':>6} {'p99':>7}"
        if app != "service":
            head += " ratio"
    print(head + " | count", flush=True)
    for label, target in targets:
        query = target.partition("?")[2]
        for n in levels:
            s = results["service"][label, n]
            line = f"{name}: {label:<22} {n:>5}"
            errors = []
            for app in apps:
                r = results[app][label, n]
                line += f" | {r.rate:15.0f} {r.percentile(0.5):6.2f} {r.percentile(0.99):7.2f}"
                if app != "service":
                    line += f" {s.rate / r.rate if r.rate else 0:5.2f}"
                if r.errors:
                    errors.append(f"{app} {r.errors} non-200")
            count = counts.get(query, "") if target.startswith(PATH) else ""
            print(f"{line} | {count}{'  ERRORS ' + ', '.join(errors) if errors else ''}",
                  flush=True)
    print(f"{name}: p50/p99 in ms; ratio = service req/s / that raw app's req/s; raw read = "
          "count + page only, raw all = every statement of the service's request", flush=True)


def run_database(name: str, url: str, document: Path | None, rows: int,
                 args: argparse.Namespace, pool: concurrent.futures.Executor, tmp: Path) -> None:
    if document is not None:
        loaded = load(url, document, tmp)
        print(f"{name}: loaded {rows} addendums with `cloudadmin load` in {loaded:.1f} s",
              flush=True)
        if url.startswith("postgresql"):
            asyncio.run(vacuum(url))
    else:
        # Brought up to this code's schema first: the SQL is recorded before serve starts.
        subprocess.run([sys.executable, "-m", "cloudadmin", "migrate"], env=service_env(url, tmp),
                       check=True, capture_output=True, cwd=ROOT)
        print(f"{name}: using the loaded database as it is ({rows} addendums)", flush=True)
    queries, statements, counts = asyncio.run(record_sql(url, tmp, rows))
    if args.queries:
        words = args.queries.split(",")
        queries = [(label, q) for label, q in queries if any(w in label for w in words)]
    sql_file = tmp / f"{name}-sql.pickle"
    sql_file.write_bytes(pickle.dumps(statements))
    targets = [("/healthz", "/healthz")]
    targets += [(label, PATH + (f"?{q}" if q else "")) for label, q in queries]
    headers = {"Authorization": f"apikey {OPERATOR}"}
    levels = args.connections

    port = free_port()
    proc = start([sys.executable, "-m", "cloudadmin", "serve", "--workers", "1",
                  "--host", HOST, "--port", str(port)],
                 service_env(url, tmp), tmp / f"{name}-serve.log", port)
    try:
        service = measure_app(pool, port, targets, levels, args.seconds, headers, args.warmup)
    finally:
        stop(proc)

    results = {"service": service}
    for mode in args.raw:
        port = free_port()
        env = {**os.environ, "RAW_ADDENDUMS_DATABASE_URL": url,
               "RAW_ADDENDUMS_SQL": str(sql_file), "RAW_ADDENDUMS_MODE": mode}
        proc = start([sys.executable, "-m", "uvicorn", "--app-dir", str(BENCH),
                      "raw_addendums_app:app", "--workers", "1", "--host", HOST,
                      "--port", str(port), "--log-level", "warning", "--no-access-log"],
                     env, tmp / f"{name}-raw-{mode}.log", port)
        try:
            results[f"raw {mode}"] = measure_app(pool, port, targets, levels, args.seconds,
                                                 headers, args.warmup)
        finally:
            stop(proc)
    report(name, targets, levels, results, counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--connections", default="8,64",
                        help="concurrent connections, comma-separated (default 8,64)")
    parser.add_argument("--warmup", type=float, default=0.5,
                        help="seconds of load before each query's measurements")
    parser.add_argument("--raw", help="raw app modes to measure: read, all or read,all "
                                      "(default read,all; read with --smoke; none)")
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--queries", help="measure only the queries whose label contains one "
                                          "of these words, comma-separated (e.g. created,client)")
    parser.add_argument("--database-url",
                        help="measure a database already loaded with this benchmark's "
                             "document (same --rows and --accounts) instead of loading one")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny run for CI: 2,000 rows, 1 s per measurement, raw read "
                             "only, one database (PostgreSQL when it answers, else SQLite)")
    args = parser.parse_args()
    base = postgres_base_url() if args.only != "sqlite" else None
    if args.smoke:
        args.rows, args.accounts, args.seconds, args.warmup = 2_000, 200, 1.0, 0.0
        args.raw = args.raw or "read"
        args.only = args.only or ("postgresql" if base else "sqlite")
    args.connections = [int(n) for n in args.connections.split(",")]
    args.raw = [m for m in (args.raw or "read,all").split(",") if m and m != "none"]
    if not set(args.raw) <= {"read", "all"}:
        parser.error("--raw takes read, all, read,all or none")
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmpdir, \
            concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        tmp = Path(tmpdir)
        if args.database_url:
            name = "sqlite" if args.database_url.startswith("sqlite") else "postgresql"
            run_database(name, args.database_url, None, args.rows, args, pool, tmp)
            return
        document = tmp / "addendums.json"
        t0 = time.perf_counter()
        with open(document, "w", encoding="utf-8") as out:
            write(args.rows, args.accounts, 1, out)
        print(f"generated {args.rows} addendums over {args.accounts} accounts in "
              f"{time.perf_counter() - t0:.1f} s; {args.seconds:g} s per measurement, "
              f"connections {args.connections}; load generator in its own process; "
              f"{os.cpu_count()} CPUs", flush=True)
        if args.only != "postgresql":
            (tmp / "sqlite").mkdir()
            run_database("sqlite", f"sqlite+aiosqlite:///{tmp}/bench.db", document, args.rows,
                         args, pool, tmp / "sqlite")
        if args.only == "sqlite":
            return
        if base is None:
            print("postgresql: not reachable, skipped", flush=True)
            return
        url = asyncio.run(create_pg_database(base))
        try:
            (tmp / "postgresql").mkdir()
            run_database("postgresql", url, document, args.rows, args, pool,
                         tmp / "postgresql")
        finally:
            asyncio.run(drop_pg_database(base, url))


if __name__ == "__main__":
    main()
