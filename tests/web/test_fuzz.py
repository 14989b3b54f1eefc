"""Schemathesis against a real `cloudadmin serve --demo` on SQLite and on PostgreSQL,
every operation, every kind of caller the demo prints a key for: no 5xx, no status the
operation does not document, documented responses match their schemas.

CI runs bench/fuzz.py's smoke (10 generated cases per operation and kind, the coverage
phase once per kind); the script itself runs longer (README.md, "Benchmarks and tools").
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
KINDS = ("operator", "reseller", "client_admin", "client_member", "engineer",
         "other_client_admin")


def test_no_server_errors_undocumented_statuses_or_shapes() -> None:
    databases = ["sqlite"] + (["postgresql"] if postgres_base_url() else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fuzz.py"), "--smoke",
         "--database", "both" if len(databases) == 2 else "sqlite"],
        capture_output=True, text=True, timeout=900, env=env, cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-20000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    ran = {(row[0], row[1]) for row in rows if len(row) > 2 and row[0] in databases}
    assert ran == {(db, kind) for db in databases for kind in KINDS}, done.stdout
    every_operation = {int(row[2]) for row in rows if len(row) > 2 and row[0] in databases}
    assert len(every_operation) == 1 and every_operation.pop() >= 30, done.stdout
