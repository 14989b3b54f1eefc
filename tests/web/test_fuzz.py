"""Schemathesis against a real `cloudadmin serve --demo` on SQLite and on PostgreSQL,
every operation, every kind of caller the demo prints a key for: no 5xx, no status the
operation does not document, documented responses match their schemas.

Each kind of caller is fuzzed on one database, half of them on each (all on SQLite when
PostgreSQL is absent), with the schema's examples and two generated cases per operation:
every operation meets both databases and every kind of caller. bench/fuzz.py's smoke,
which CI runs after the suite (.ci/run), adds schemathesis' coverage phase (boundary and
negative values, thousands of cases per kind) and both databases for every kind; the
script itself runs longer (README.md, "Benchmarks and tools").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.databases import postgres_base_url

# Schemathesis two processes at a time against a server: not beside a timing test.
pytestmark = [pytest.mark.slow, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("operator", "reseller", "client_admin", "client_member", "engineer", "other_client_admin")
EXAMPLES = 2


def fuzz(database: str, kinds: tuple[str, ...]) -> list[list[str]]:
    """bench/fuzz.py's rows for ``kinds`` on ``database`` (it fails the test when
    schemathesis found anything)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fuzz.py"),
            "--database",
            database,
            "--kinds",
            ",".join(kinds),
            "--max-examples",
            str(EXAMPLES),
            "--phases",
            "examples,fuzzing",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-20000:]
    return [line.split() for line in done.stdout.splitlines()]


def test_no_server_errors_undocumented_statuses_or_shapes() -> None:
    split = (
        {"sqlite": KINDS[::2], "postgresql": KINDS[1::2]}
        if postgres_base_url()
        else {"sqlite": KINDS}
    )
    rows = [row for database, kinds in split.items() for row in fuzz(database, kinds)]
    ran = {(row[0], row[1]) for row in rows if len(row) > 2 and row[0] in split}
    assert ran == {(db, kind) for db, kinds in split.items() for kind in kinds}, rows
    every_operation = {int(row[2]) for row in rows if len(row) > 2 and row[0] in split}
    assert len(every_operation) == 1 and every_operation.pop() >= 30, rows
