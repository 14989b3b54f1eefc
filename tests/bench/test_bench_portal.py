"""The portal benchmark still runs (a tiny smoke; real figures come from running it by
hand, docs/performance.md, "The Admin Portal"): it loads, serves, signs in, drives every
page the portal serves and the API operation behind it, streams the CSV export, and
prints the table, the first page's p50, the CSV's rows/s and the peak RSS."""

from __future__ import annotations

import re
import sys

import pytest

from tests.bench.scripts import BENCH, run_bench

sys.path.insert(0, str(BENCH))
from bench_portal import PAGES  # noqa: E402

NUMBER = r"[\d.]+"


@pytest.mark.slow
@pytest.mark.heavy  # a load generator: not beside a timing test
def test_bench_portal_smoke() -> None:
    out = run_bench("bench_portal.py", "--smoke", timeout=400)
    assert "ERRORS" not in out, out
    rows = {
        cells[0]: cells
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith("| page |")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    # Every page of the table was measured, or said to be not served yet.
    for label, _, api in PAGES:
        if f"{label}: " in out and "not served yet" in out.split(f"{label}: ", 1)[1][:80]:
            continue
        assert label in rows, (label, out)
        page_p50, api_cell, ratio = rows[label][1], rows[label][2], rows[label][3]
        assert re.fullmatch(rf"{NUMBER} / {NUMBER}", page_p50), rows[label]
        if api is None:
            assert api_cell == ratio == "–", rows[label]
        else:
            assert re.fullmatch(rf"{NUMBER} / {NUMBER}", api_cell), rows[label]
            assert re.fullmatch(NUMBER, ratio), rows[label]
    assert re.search(rf"first page p50 {NUMBER} ms", out), out
    found = re.search(r"CSV export of ([\d,]+) addendums in [\d.]+ s: [\d,]+ rows/s", out)
    assert found and found.group(1) == "2,000", out
    assert re.search(r"serve peak RSS \d+ MB before the export, \d+ MB after it", out), out
