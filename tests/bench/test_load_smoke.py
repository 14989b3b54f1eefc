"""The load benchmark still runs: `cloudadmin load` by COPY against a hand-made bulk COPY,
with the counters checked (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.databases import postgres_base_url

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_bench_load_smoke() -> None:
    if postgres_base_url() is None:
        pytest.skip("PostgreSQL is not reachable")
    done = subprocess.run(
        [sys.executable, str(BENCH / "load.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "postgresql: counters exact" in done.stdout, done.stdout
    assert "ratio load / COPY" in done.stdout, done.stdout
    assert "peak memory" in done.stdout, done.stdout
