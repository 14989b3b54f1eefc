"""The addendum benchmark still runs (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_bench_addendums_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_addendums.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "req/s" in done.stdout and "sqlite" in done.stdout
    assert "deep offset" in done.stdout
