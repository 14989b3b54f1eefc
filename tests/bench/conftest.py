"""The benchmarks' smokes (each runs a bench/ script at a small size and checks what it
prints) are marked ``bench``: they measure nothing a change of the service's code would
break that the suite does not test, and they start processes for minutes of the suite's
time, so `scripts/test` leaves them out and CI (`.ci/run`) runs them after it, one after
the other, as it runs the fuzzing smoke."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.bench)
