"""Fixtures of the importer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudadmin.config import Settings
from cloudadmin.importer import addendum_copy
from cloudadmin.kit.crypto import SecretBox


@pytest.fixture
def box(settings: Settings) -> SecretBox:
    return SecretBox(settings.resolved_secret_key())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "copy_fallback: the test has valid addendums validated by pydantic"
    )


@pytest.fixture(autouse=True)
def no_copy_fallback(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test whose load left a valid chunk of addendums to pydantic (the COPY
    path's fallback: importer/addendum_copy.py) unless it says it does, as
    tests/driver_guard.py does for the driver's replays."""
    before = addendum_copy.fallback_count()
    yield
    fallbacks = addendum_copy.fallback_count() - before
    if fallbacks and request.node.get_closest_marker("copy_fallback") is None:
        pytest.fail(
            f"the COPY path left {fallbacks} valid chunk(s) to pydantic (see the warnings "
            "of the cloudadmin.importer.addendum_copy log); mark the test copy_fallback "
            "if that is what it tests",
            pytrace=False,
        )
