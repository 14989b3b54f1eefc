"""Fixtures of the one-definition tests: the key the importer seals with."""

from __future__ import annotations

import pytest

from cloudadmin.config import Settings
from cloudadmin.kit.crypto import SecretBox


@pytest.fixture
def box(settings: Settings) -> SecretBox:
    return SecretBox(settings.resolved_secret_key())
