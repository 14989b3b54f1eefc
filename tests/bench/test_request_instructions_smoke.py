"""bench/request_instructions.py still runs (plain, on SQLite; the counted figures come
from running it by hand under valgrind)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_bench_request_instructions_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "request_instructions.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert re.search(r"/billing/org/v1/addendums: [\d.]+ ms CPU a request", done.stdout), (
        done.stdout
    )
