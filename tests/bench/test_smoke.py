"""The benchmarks still run (a tiny smoke; real figures come from running them by hand)."""

from __future__ import annotations

import pytest

from tests.bench.scripts import run_bench


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_api_smoke() -> None:
    out = run_bench("bench_api.py", "--smoke", timeout=300)
    assert "req/s" in out and "sqlite" in out


@pytest.mark.slow
def test_auth_timing_smoke() -> None:
    out = run_bench("auth_timing.py", "--pairs", "5", "--only", "sqlite", timeout=300)
    assert "unknown" in out and "ms" in out, out
