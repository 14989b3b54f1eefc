"""Fixtures of the importer tests."""

from __future__ import annotations

import pytest

from cloudadmin.config import Settings
from cloudadmin.kit.crypto import SecretBox


@pytest.fixture
def box(settings: Settings) -> SecretBox:
    return SecretBox(settings.resolved_secret_key())
