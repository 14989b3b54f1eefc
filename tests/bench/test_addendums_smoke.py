"""The addendum benchmark still runs (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import pytest

from tests.bench.scripts import run_bench


@pytest.mark.slow
def test_bench_addendums_smoke() -> None:
    out = run_bench("bench_addendums.py", "--smoke", timeout=300)
    assert "req/s" in out and "sqlite" in out
    assert "deep offset" in out
