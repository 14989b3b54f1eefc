"""Every test fails when a fast path fell back to the ordinary one without saying so: on
a fast path a fallback is a slowdown nobody would otherwise see.

- db/driver.py replays a statement through SQLAlchemy (a statement the fast path binds
  wrongly is refused by the database, then runs again the ordinary way and succeeds); a
  test that provokes one on purpose (a refused statement, a lost connection) says so with
  ``@pytest.mark.driver_fallback``.
- importer/addendum_copy.py leaves a valid chunk of addendums to pydantic; a test that
  means it says so with ``@pytest.mark.copy_fallback``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from cloudadmin.db import driver
from cloudadmin.importer import addendum_copy

# marker: (its description, the fallback counter, what a fallback is, the log to read)
GUARDS: dict[str, tuple[str, Callable[[], int], str, str]] = {
    "driver_fallback": (
        "the test makes db/driver.py replay statements",
        driver.fallback_count,
        "db/driver.py replayed {n} statement(s) through SQLAlchemy",
        "cloudadmin.db.driver",
    ),
    "copy_fallback": (
        "the test has valid addendums validated by pydantic",
        addendum_copy.fallback_count,
        "the COPY path left {n} valid chunk(s) to pydantic",
        "cloudadmin.importer.addendum_copy",
    ),
}


def pytest_configure(config: pytest.Config) -> None:
    for marker, (description, *_) in GUARDS.items():
        config.addinivalue_line("markers", f"{marker}: {description}")


@pytest.fixture(autouse=True)
def no_unexpected_fallback(request: pytest.FixtureRequest) -> Iterator[None]:
    before = {marker: guard[1]() for marker, guard in GUARDS.items()}
    yield
    for marker, (_, count, what, log) in GUARDS.items():
        n = count() - before[marker]
        if n and request.node.get_closest_marker(marker) is None:
            pytest.fail(
                f"{what.format(n=n)} (see the warnings of the {log} log); mark the test "
                f"{marker} if that is what it tests",
                pytrace=False,
            )
