"""The HTTP addendum benchmark still runs (a tiny smoke; real figures come from running it
by hand): it loads, serves, drives the service, the same-SQL app and, on PostgreSQL, the
obvious-SQL peer (after checking its answers equal the service's), and prints both
ratios."""

from __future__ import annotations

import re

import pytest

from tests.bench.scripts import run_bench

LABELS = (
    "/healthz",
    "no filter",
    "no filter, limit 100",
    "by client (busiest)",
    "status+product",
    "company_name search",
    "created in a month",
    "ordering -created_at",
    "plan_name search",
    "deep offset 200",
)


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_addendums_http_smoke() -> None:
    out = run_bench("addendums.py", "--smoke", timeout=400)
    postgres = "postgresql: " in out
    assert "req/s" in out and "raw read" in out and "ERRORS" not in out
    if postgres:
        assert re.search(r"the obvious peer answered as the service on \d+ queries", out), out
    apps = 3 if postgres else 2  # the service, raw read, and the obvious peer on PostgreSQL
    for label in LABELS:
        rows = [
            line for line in out.splitlines() if re.match(rf"\w+: {re.escape(label)} +\d+ \|", line)
        ]
        assert len(rows) == 2, (label, out)  # at 8 connections and at 64
        for row in rows:
            rates = [float(x) for x in re.findall(r"\|\s+(\d+)\s+[\d.]+\s+[\d.]+", row)]
            assert len(rates) == apps and all(rate > 0 for rate in rates), row
        summary = [line for line in out.splitlines() if line.startswith(f"| {label} |")]
        assert len(summary) == 2, (label, out)
        for line in summary:
            cells = [c.strip() for c in line.strip("|").split("|")]
            # query, conns, req/s, p50, p99, then (req/s, ratio) for raw read, raw all and
            # obvious, then count; raw all is not run in the smoke, obvious not on SQLite.
            assert len(cells) == 12, line
            assert cells[7:9] == ["n/a", "n/a"], line
            obvious = cells[9:11]
            if postgres:
                assert obvious[1].endswith("×"), line
            else:
                assert obvious == ["n/a", "n/a"], line
    assert "÷ raw all" in out and "÷ obvious" in out
