"""Schemathesis against a real `cloudadmin serve --demo`, on SQLite and PostgreSQL.

Every operation of the service's own OpenAPI document, once per kind of caller the demo
prints a key for, with the checks not_a_server_error, status_code_conformance and
response_schema_conformance: no 5xx, no status the operation does not document, no
response that does not match its schema. One server per database (the demo landscape,
a fresh database); the kinds run against it two at a time, least privileged first and
the operator last (a
fuzzed DELETE /iam/clients/{id} may end another kind's account).

Prints, per database and kind: operations tested, test cases, unique failures per check,
duration; then the totals. Exits 1 when anything failed, printing schemathesis' report.

    .venv/bin/python bench/fuzz.py                         # 200 per kind: 1,200+ per operation
    .venv/bin/python bench/fuzz.py --max-examples 1000 --database postgresql
    .venv/bin/python bench/fuzz.py --smoke                 # what CI runs after the suite (.ci/run)

PostgreSQL is found as by the tests (CLOUDADMIN_TEST_POSTGRES_URL or the local default);
the run creates its own database and drops it. Nothing is sent off this machine: the
service listens on 127.0.0.1, its dispatcher is off, and bench/fuzz_hooks.py points the
broker probe (subscribe_amqp_test) at 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

HOST = "127.0.0.1"
SECRET_KEY = "bench-fuzz"
CHECKS = ("not_a_server_error", "status_code_conformance", "response_schema_conformance")
# How schemathesis' report titles each check's failures.
CHECK_TITLES = {
    "not_a_server_error": ("Server error",),
    "status_code_conformance": ("Undocumented status code",),
    "response_schema_conformance": ("Response violates schema",),
}
# Least privileged first, the operator last (see the module's docstring).
ORDER = ("client_member", "engineer", "other_client_admin", "client_admin", "reseller", "operator")


@dataclass
class Outcome:
    database: str
    kind: str
    operations: int = 0
    cases: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    ok: bool = True
    report: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def service_env(url: str | None, data: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "CLOUDADMIN_DATA_DIR": str(data),
        "CLOUDADMIN_SECRET_KEY": SECRET_KEY,
        "CLOUDADMIN_LOG_LEVEL": "WARNING",
        "CLOUDADMIN_RUN_DISPATCHER": "false",
        # The fuzzer is one client sending thousands of requests.
        "CLOUDADMIN_AUTH_FAILURE_LIMIT": "1000000/minute",
    }
    env.pop("CLOUDADMIN_KEY_RATE_LIMIT", None)
    env.pop("CLOUDADMIN_DATABASE_URL", None)
    if url is not None:
        env["CLOUDADMIN_DATABASE_URL"] = url
    src = str(ROOT / "src")
    env["PYTHONPATH"] = (
        src + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else src
    )
    return env


class Server:
    """`cloudadmin serve --demo` on a free port; its keys read from what it prints."""

    def __init__(self, url: str | None, data: Path) -> None:
        self.port = free_port()
        self.base = f"http://{HOST}:{self.port}"
        self.out = data / "server.out"
        self.log = data / "server.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cloudadmin",
                "serve",
                "--demo",
                "--host",
                HOST,
                "--port",
                str(self.port),
            ],
            env=service_env(url, data),
            cwd=ROOT,
            stdout=self.out.open("w"),
            stderr=self.log.open("w"),
        )
        self.keys = self._wait()

    def _wait(self) -> dict[str, str]:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"serve exited {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return self._keys()
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit(f"serve did not answer:\n{self.log.read_text()[-3000:]}")

    def _keys(self) -> dict[str, str]:
        keys = {}
        for line in self.out.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and re.fullmatch(r"\d+_\S+", parts[1]):
                keys[parts[0]] = parts[1]
        if not keys:
            raise SystemExit(f"no keys printed:\n{self.out.read_text()}")
        return keys

    def stop(self) -> str:
        """Stops the server; its log."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.log.read_text()


def schemathesis(
    base: str, key: str, args: argparse.Namespace, outcome: Outcome, phases: str | None
) -> None:
    cli = Path(sys.executable).parent / "schemathesis"
    argv = [
        str(cli),
        "run",
        f"{base}/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--max-examples",
        str(args.max_examples),
        "--seed",
        str(args.seed),
        "--workers",
        "1",
        "--header",
        f"Authorization: apikey {key}",
        "--no-color",
        "--request-timeout",
        "30",
    ]
    if phases:
        argv += ["--phases", phases]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "fuzz_hooks",
        "PYTHONPATH": str(BENCH) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout
    )
    outcome.seconds = time.perf_counter() - t0
    text = done.stdout + done.stderr
    tested = re.search(r"Tested:\s+(\d+)", text)
    outcome.operations = int(tested.group(1)) if tested else 0
    generated = re.search(r"(\d+) generated", text)
    outcome.cases = int(generated.group(1)) if generated else 0
    failures = text.partition("= FAILURES =")[2].partition("= WARNINGS =")[0]
    outcome.failures = {
        check: sum(failures.count(f" {title}") for title in CHECK_TITLES[check]) for check in CHECKS
    }
    outcome.ok = done.returncode == 0
    if not outcome.ok:
        outcome.report = text


def phases_of(args: argparse.Namespace, database: int, kind: int) -> str | None:
    """The smoke runs the slow coverage phase (boundary and negative values, about 2,300
    cases whatever --max-examples says) for half the kinds on each database, the other
    half on the other: every kind gets it once."""
    if not args.smoke:
        return args.phases
    if (database + kind) % 2 == 0:
        return "examples,coverage,fuzzing"
    return "examples,fuzzing"


def run_database(
    name: str, url: str | None, args: argparse.Namespace, data: Path, index: int
) -> list[Outcome]:
    server = Server(url, data)
    outcomes = []
    try:
        kinds = [k for k in ORDER if k in server.keys] + sorted(set(server.keys) - set(ORDER))
        if args.kinds:
            kinds = [k for k in kinds if k in args.kinds.split(",")]
        # Kinds run side by side in separate schemathesis processes, each with one
        # worker: threads of one process meet a CPython 3.11 bug (concurrent ast.parse
        # in Hypothesis: "AST constructor recursion depth mismatch").
        with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
            futures = {}
            for n, kind in enumerate(kinds):
                outcome = Outcome(name, kind)
                futures[
                    pool.submit(
                        schemathesis,
                        server.base,
                        server.keys[kind],
                        args,
                        outcome,
                        phases_of(args, index, n),
                    )
                ] = outcome
                if args.parallel == 1:
                    futures_done(futures, outcomes)
            futures_done(futures, outcomes)
    finally:
        log = server.stop()
    if "Traceback" in log:
        outcomes[-1].ok = False
        outcomes[-1].report += f"\nserver log ({name}):\n{log[-8000:]}"
    return outcomes


def futures_done(
    futures: dict[concurrent.futures.Future[None], Outcome], outcomes: list[Outcome]
) -> None:
    for future in concurrent.futures.as_completed(list(futures)):
        future.result()
        outcome = futures.pop(future)
        outcomes.append(outcome)
        print(line(outcome), flush=True)


def line(o: Outcome) -> str:
    fails = "  ".join(f"{o.failures.get(c, 0):>4}" for c in CHECKS)
    per_op = o.cases // o.operations if o.operations else 0
    return (
        f"{o.database:<10} {o.kind:<19} {o.operations:>4} {o.cases:>8} {per_op:>7}  "
        f"{fails}  {o.seconds:>7.1f}s  {'ok' if o.ok else 'FAILED'}"
    )


def header() -> str:
    return (
        f"{'database':<10} {'kind':<19} {'ops':>4} {'cases':>8} {'per op':>7}  "
        f"{'5xx':>4}  {'stat':>4}  {'schm':>4}  {'time':>8}\n"
        "(failures: 5xx = not_a_server_error, stat = status_code_conformance, "
        "schm = response_schema_conformance; unique failures)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument(
        "--max-examples",
        type=int,
        default=200,
        help="generated cases per operation and kind of caller (fuzzing)",
    )
    parser.add_argument("--kinds", help="comma-separated kinds of caller (default: all)")
    parser.add_argument("--phases", help="schemathesis phases (default: all of them)")
    parser.add_argument(
        "--parallel", type=int, default=2, help="kinds of caller fuzzed at once (one process each)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--timeout", type=float, default=6 * 3600, help="seconds one kind's run may take"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CI's size: 10 examples, the coverage phase once per kind",
    )
    args = parser.parse_args()
    if args.smoke:
        args.max_examples = 10
    names = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    print(header(), flush=True)
    outcomes: list[Outcome] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cloudadmin-fuzz-") as tmp:
        for index, name in enumerate(names):
            data = Path(tmp) / name
            data.mkdir()
            if name == "sqlite":
                outcomes += run_database(name, None, args, data, index)
                continue
            base = postgres_base_url()
            if base is None:
                print("postgresql: not reachable, skipped", flush=True)
                continue
            url = asyncio.run(create_pg_database(base))
            try:
                outcomes += run_database(name, url, args, data, index)
            finally:
                asyncio.run(drop_pg_database(base, url))
    total = Outcome("total", f"{len(outcomes)} runs")
    total.operations = max((o.operations for o in outcomes), default=0)
    total.cases = sum(o.cases for o in outcomes)
    total.failures = {c: sum(o.failures.get(c, 0) for o in outcomes) for c in CHECKS}
    total.seconds = time.perf_counter() - t0
    total.ok = all(o.ok for o in outcomes)
    print(line(total), flush=True)
    for o in outcomes:
        if not o.ok:
            print(f"\n===== {o.database} / {o.kind} =====\n{o.report}", flush=True)
    return 0 if total.ok and outcomes else 1


if __name__ == "__main__":
    sys.exit(main())
