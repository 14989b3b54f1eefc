"""The load benchmark still runs: `cloudadmin load` by COPY against a hand-made bulk COPY,
with the counters checked (a tiny smoke; real figures come from running it by hand)."""

from __future__ import annotations

import pytest

from tests.bench.scripts import run_bench
from tests.databases import postgres_base_url


@pytest.mark.slow
def test_bench_load_smoke() -> None:
    if postgres_base_url() is None:
        pytest.skip("PostgreSQL is not reachable")
    out = run_bench("load.py", "--smoke", timeout=300)
    assert "postgresql: counters exact" in out, out
    assert "ratio load / COPY" in out, out
    assert "peak memory" in out, out
