"""The observability benchmark still runs (a tiny smoke; figures come from running it
by hand, docs/operations.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_bench_observability_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "observability.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if "us/request" in line]
    assert len(rows) == 6, done.stdout
    assert sum("multiprocess" in row for row in rows) == 3
