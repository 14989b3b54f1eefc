"""The argon2id cost of new password hashes is configuration (docs/configuration.md);
a hash written under other parameters still verifies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudadmin.config import Settings
from cloudadmin.kit import crypto


@pytest.fixture(autouse=True)
def restore_cost() -> Iterator[None]:
    before = crypto._password_hasher
    yield
    crypto._password_hasher = before


def parameters(password_hash: str) -> str:
    return password_hash.split("$")[3]  # $argon2id$v=19$m=…,t=…,p=…$salt$hash


class TestConfiguredCost:
    def test_the_default_is_rfc_9106s_second_recommendation(self):
        fields = Settings.model_fields
        assert fields["password_hash_time_cost"].default == 3
        assert fields["password_hash_memory_kib"].default == 65_536

    def test_new_hashes_are_written_with_the_configured_cost(self):
        crypto.configure_password_hashing(time_cost=2, memory_kib=1024)
        written = crypto.hash_password("s3cret-Passw0rd")
        assert written.startswith("$argon2id$")
        assert parameters(written) == "m=1024,t=2,p=4"
        assert crypto.verify_password(written, "s3cret-Passw0rd")
        assert not crypto.verify_password(written, "other")

    def test_a_hash_written_under_other_parameters_still_verifies(self):
        crypto.configure_password_hashing(time_cost=1, memory_kib=64)
        old = crypto.hash_password("s3cret-Passw0rd")
        crypto.configure_password_hashing(time_cost=2, memory_kib=128)
        assert parameters(crypto.hash_password("x")) == "m=128,t=2,p=4"
        assert crypto.verify_password(old, "s3cret-Passw0rd")
