"""The HTTP addendum benchmark still runs (a tiny smoke; real figures come from running it
by hand): it loads, serves, drives the service and the raw data-path app, and prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_addendums_http_smoke() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "addendums.py"), "--smoke"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "req/s" in out and "raw read" in out and "ERRORS" not in out
    for label in ("/healthz", "no filter", "by client", "status+product",
                  "created in a month", "plan_name search", "deep offset"):
        rows = [line for line in out.splitlines() if f": {label}" in line]
        assert len(rows) == 2, (label, out)  # at 8 connections and at 64
        for row in rows:
            rates = [float(x) for x in re.findall(r"\|\s+(\d+)\s+[\d.]+\s+[\d.]+", row)]
            assert len(rates) == 2 and all(rate > 0 for rate in rates), row
