"""bench/idle_cpu.py still runs (a short window on SQLite; real figures come from running
it by hand): it measures an idle `serve` with the dispatcher on and off, and times one
event to a real RabbitMQ queue."""

from __future__ import annotations

import os
import re

import pytest

from tests.bench.scripts import run_bench
from tests.events.conftest import _rabbit_answers


@pytest.mark.slow
def test_bench_idle_cpu_smoke() -> None:
    if not _rabbit_answers():
        if os.environ.get("CI") == "true":
            pytest.fail(
                "RabbitMQ is required under CI=true but 127.0.0.1:5672 does not answer",
                pytrace=False,
            )
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")
    out = run_bench("idle_cpu.py", "--smoke", timeout=300)
    for state in ("on ", "off"):
        assert re.search(rf"sqlite +dispatcher {state}: idle CPU +[\d.]+ %", out), out
    assert re.search(r"sqlite +one event, commit -> queue: median \d+ ms", out), out
