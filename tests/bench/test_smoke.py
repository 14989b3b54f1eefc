"""The benchmarks still run (a tiny smoke; real figures come from running them by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_api_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_api.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "req/s" in done.stdout and "sqlite" in done.stdout


@pytest.mark.slow
def test_auth_timing_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "auth_timing.py"), "--pairs", "5", "--only", "sqlite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "unknown" in done.stdout and "ms" in done.stdout, done.stdout
