"""The export benchmark still runs (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_bench_export_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "export.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("sqlite")]
    assert len(rows) == 2, done.stdout
