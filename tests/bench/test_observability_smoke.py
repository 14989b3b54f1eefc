"""The observability benchmark still runs (a tiny smoke; figures come from running it
by hand, docs/operations.md)."""

from __future__ import annotations

from tests.bench.scripts import run_bench


def test_bench_observability_smoke() -> None:
    out = run_bench("observability.py", "--smoke", timeout=120)
    rows = [line for line in out.splitlines() if "us/request" in line]
    assert len(rows) == 6, out
    assert sum("multiprocess" in row for row in rows) == 3
