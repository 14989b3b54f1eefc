"""The importer's e-mail check (importer/fields.py) gives email_validator's verdict on
every address, also those it decides without calling email_validator (a plain ASCII
address: the domain's cached verdict and the length)."""

from __future__ import annotations

from email_validator import EmailNotValidError, validate_email
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cloudadmin.importer import fields

LOCAL_CHARS = "aZ09_!#$%&'*+/=?^`{|}~-.\" (),:;<>@[\\]é"
DOMAIN_CHARS = "aZ09-._@[]é"
LABELS = ["com", "test", "local", "localhost", "invalid", "onion", "arpa", "example",
          "xn--bcher-kva", "ab--cd", "-a", "a-", "1", "123", "co", "a" * 63, "a" * 64,
          ""]  # fmt: skip


def verdict(address: str) -> bool:
    try:
        validate_email(address, check_deliverability=False, test_environment=True)
    except EmailNotValidError:
        return False
    return True


local_parts = st.one_of(
    st.text(LOCAL_CHARS, min_size=0, max_size=12),
    st.text("ab", min_size=1, max_size=80),
)
domains = st.one_of(
    st.lists(st.sampled_from(LABELS), min_size=1, max_size=4).map(".".join),
    st.text(DOMAIN_CHARS, max_size=12),
    st.lists(st.sampled_from(["a" * 60, "b" * 63]), min_size=1, max_size=5).map(
        lambda labels: ".".join([*labels, "com"])
    ),
)


@settings(max_examples=2_000, deadline=None)
@given(local_parts, domains)
@example("john.doe", "example.com")
@example("a" * 64, "b" * 63 + "." + "c" * 63 + "." + "d" * 57 + ".com")  # 254 long
@example("a" * 65, "b" * 63 + "." + "c" * 63 + "." + "d" * 57 + ".com")  # 255 long
@example("x", "test")
@example("x", "a.local")
@example("x", "a.123")
@example("x", "ab--cd.com")
@example("Postmaster", "EXAMPLE.COM")
def test_the_verdict_is_email_validators(local: str, domain: str) -> None:
    address = f"{local}@{domain}"
    fields._valid_domain.cache_clear()
    assert fields._valid_email(address) is verdict(address), address


def test_a_plain_address_is_decided_by_its_domains_verdict() -> None:
    fields._checked_email.cache_clear()
    fields._valid_domain.cache_clear()
    for n in range(100):
        assert fields._valid_email(f"user{n}@example.com")
    assert fields._checked_email.cache_info().misses == 1
