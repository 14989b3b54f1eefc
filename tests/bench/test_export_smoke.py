"""The export benchmark still runs (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import pytest

from tests.bench.scripts import run_bench


@pytest.mark.slow
def test_bench_export_smoke() -> None:
    out = run_bench("export.py", "--smoke", timeout=300)
    rows = [line for line in out.splitlines() if line.startswith("sqlite")]
    assert len(rows) == 2, out
