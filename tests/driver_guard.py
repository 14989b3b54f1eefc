"""Every test fails when db/driver.py replayed a statement through SQLAlchemy that it did
not expect: on the driver path a replay is a slowdown nobody would otherwise see (a
statement the fast path binds wrongly is refused by the database, then runs again the
ordinary way and succeeds). A test that provokes one on purpose (a refused statement, a
lost connection) says so with ``@pytest.mark.driver_fallback``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudadmin.db import driver


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "driver_fallback: the test makes db/driver.py replay statements"
    )


@pytest.fixture(autouse=True)
def no_driver_fallback(request: pytest.FixtureRequest) -> Iterator[None]:
    before = driver.fallback_count()
    yield
    replays = driver.fallback_count() - before
    if replays and request.node.get_closest_marker("driver_fallback") is None:
        pytest.fail(
            f"db/driver.py replayed {replays} statement(s) through SQLAlchemy "
            "(see the warnings of the cloudadmin.db.driver log); mark the test "
            "driver_fallback if that is what it tests",
            pytrace=False,
        )
