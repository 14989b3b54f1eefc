"""The cost-curve script still runs (a tiny smoke; real figures come from running it by
hand): bench/addendums.py at two sizes on PostgreSQL, the service against the obvious SQL,
and one table with a column group per size."""

from __future__ import annotations

import re

import pytest

from tests.bench.scripts import run_bench
from tests.databases import postgres_base_url


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_cost_curve_smoke() -> None:
    if postgres_base_url() is None:
        pytest.skip("PostgreSQL is not reachable")
    out = run_bench("cost_curve.py", "--smoke", timeout=600)
    assert "ERRORS" not in out, out
    # The curve's table comes after bench/addendums.py's own tables, streamed before it.
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| query | conns | 2k "))
    columns = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = [line for line in lines[start:] if line.startswith("| no filter | 8 |")]
    assert len(rows) == 1, out
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert len(cells) == len(columns) == 2 + 5 * 2, (lines[start], rows[0])
    for size, rows_count in (("2k", "2,000"), ("5k", "5,000")):
        rate = cells[columns.index(f"{size} req/s")]
        assert re.fullmatch(r"[\d,.]+", rate) and float(rate.replace(",", "")) > 0, rows[0]
        assert cells[columns.index(f"{size} ÷ obvious")].endswith("×"), rows[0]
        assert cells[columns.index(f"{size} count")] == rows_count, rows[0]
    assert re.search(r"loaded with `cloudadmin load`: 2k in [\d.]+ s, 5k in [\d.]+ s", out), out
