"""bench/request_instructions.py still runs (plain, on SQLite; the counted figures come
from running it by hand under valgrind)."""

from __future__ import annotations

import re

import pytest

from tests.bench.scripts import run_bench


@pytest.mark.slow
def test_bench_request_instructions_smoke() -> None:
    out = run_bench("request_instructions.py", "--smoke", timeout=300)
    assert re.search(r"/billing/org/v1/addendums: [\d.]+ ms CPU a request", out), out
