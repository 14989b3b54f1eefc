"""kit/redact.py: secrets are masked by name and inside URLs, in work linear in the
text, never recursing, and only as far as the text is kept (docs/activity-log.md,
"Secrets")."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from cloudadmin.kit.redact import (
    MASK,
    is_secret_name,
    mask_url_password,
    password_span,
    redact,
    redact_query,
)

# Texts a client can send that made each URL's search run to the end of the text (or
# the scheme pattern try every position of a run of letters): quadratic.
WORST = ["a://", "a://@", "a://a:@@/", "a://:@ ", "a:// :@"]


def cpu_seconds(work: Callable[[], object]) -> float:
    """The least CPU time of three runs: CPU, not wall time, so that a busy machine
    (other processes) does not count; the least, so that a collection or a cold cache
    does not either."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return max(best, 1e-4)  # a few microseconds are fixed costs, not work


def repeated(pattern: str, chars: int) -> str:
    return (pattern * (chars // len(pattern) + 1))[:chars]


class TestLinearWork:
    @pytest.mark.parametrize("pattern", WORST)
    def test_eight_times_the_text_costs_about_eight_times_the_work(self, pattern: str):
        # Linear: 8x the text, about 8x the CPU; quadratic: 64x. The bound leaves room
        # for noise on a busy machine and fails long before quadratic.
        small = cpu_seconds(lambda: redact({"x": repeated(pattern, 16_384)}))
        large = cpu_seconds(lambda: redact({"x": repeated(pattern, 8 * 16_384)}))
        assert large < 24 * small, (pattern, small, large)

    @pytest.mark.parametrize("pattern", WORST)
    def test_a_megabyte_of_the_worst_pattern_is_linear_work(self, pattern: str):
        small = cpu_seconds(lambda: mask_url_password(repeated(pattern, 16_384)))
        large = cpu_seconds(lambda: mask_url_password(repeated(pattern, 1 << 20)))
        assert large < 3 * 64 * small, (pattern, small, large)

    def test_with_a_bound_only_the_start_is_looked_at(self):
        # What the activity log keeps: 64 KiB. A megabyte costs what its first 64 KiB
        # cost, not sixteen times as much.
        kept = cpu_seconds(lambda: redact({"x": repeated("a://:@ ", 65_536)}, max_chars=65_536))
        whole = cpu_seconds(lambda: redact({"x": repeated("a://:@ ", 1 << 20)}, max_chars=65_536))
        assert whole < 4 * kept, (kept, whole)


class TestNames:
    @pytest.mark.parametrize(
        "name",
        [
            "password",
            "mailPassword",
            "passwd",
            "client_secret",
            "access_token",
            "api_key",
            "api-key",
            "apikey",
            "API.Key",
            "x-api-key",
            "X_API_KEY",
            "key",
            "Key",
            "auth",
            "AUTH",
            "authorization",
            "credential",
            "credentials",
            "aws-credentials",
            "auth_header_value",
            "private_key",
            "access key",
            "passphrase",
            "pwd",
        ],
    )
    def test_secret_whatever_the_case_and_separators(self, name: str):
        assert is_secret_name(name)

    @pytest.mark.parametrize(
        "name", ["auth_header_name", "author", "keys", "email", "name", "page", "monkey"]
    )
    def test_not_secret(self, name: str):
        assert not is_secret_name(name)

    def test_query_parameters_by_the_same_names(self):
        masked = redact_query("api-key=1&X-Api-Key=2&auth=3&credential=4&page=2")
        assert masked == (
            "api-key=%2A%2A%2A&X-Api-Key=%2A%2A%2A&auth=%2A%2A%2A&credential=%2A%2A%2A&page=2"
        )

    def test_a_query_without_secrets_is_unchanged(self):
        assert redact_query("page=2&q=a%20b&x") == "page=2&q=a%20b&x"


class TestUrls:
    @pytest.mark.parametrize(
        ("text", "masked"),
        [
            ("amqp://user:pw@host/vh", "amqp://user:***@host/vh"),
            ("amqp://svc:p@ss@mq.example:5672/v", "amqp://svc:***@mq.example:5672/v"),
            ("amqp://u:pa/ss@host/v", "amqp://u:***@host/v"),
            ("amqp://u:pa?ss@host/v", "amqp://u:***@host/v"),
            # A raw space in the password: up to the next "@".
            ("amqp://u:pa ss@host/", "amqp://u:***@host/"),
            ("amqp://u:pa ss w@x@host/v", "amqp://u:***@host/v"),
            ("amqp://host:5672/vh", "amqp://host:5672/vh"),
            ("see https://example.com:8443/x or me@example.com", None),
            ("amqp://u:pa ss", None),
            (
                "two amqp://a:1@h/ and amqps://b:2@g/",
                "two amqp://a:***@h/ and amqps://b:***@g/",
            ),
            (
                "postgresql+asyncpg://postgres:pw@127.0.0.1:5432/db",
                "postgresql+asyncpg://postgres:***@127.0.0.1:5432/db",
            ),
        ],
    )
    def test_the_password_of_every_url(self, text: str, masked: str | None):
        assert mask_url_password(text) == (masked or text)

    def test_a_query_value_holding_a_url(self):
        masked = redact_query("url=amqp://u:pa%20ss@h/&page=2")
        assert "pa" not in masked.replace("page", "") and "ss" not in masked

    @pytest.mark.parametrize(
        "whole", ["amqp://u:secretpw@host/v", "amqp://u:se@cret@host/v", "amqp://u:se cret@h/v"]
    )
    def test_a_password_cut_in_half_is_masked(self, whole: str):
        # Cut anywhere: nothing of the password is shown, and at most the host after it.
        host = whole[whole.rindex("@") :]
        for cut in range(len("amqp://u:") + 1, len(whole)):
            masked = mask_url_password(whole[:cut], cut=True)
            assert masked.startswith("amqp://u:" + MASK), (cut, masked)
            assert masked.removeprefix("amqp://u:" + MASK) in ("", host[: cut - len(whole)]), (
                cut,
                masked,
            )

    def test_password_span_finds_it_by_parsing(self):
        assert password_span("amqp://u:pw@h/v") == (9, 11)
        assert password_span("amqp://h/v") is None
        assert password_span("not a url") is None


class TestRedact:
    def test_by_name_at_any_depth_and_inside_urls(self):
        value = {
            "password": "hunter2",
            "nested": [{"Api-Key": "k", "auth": None, "name": "n"}],
            "url": "amqp://u:pw@h/",
        }
        assert redact(value) == {
            "password": MASK,
            "nested": [{"Api-Key": MASK, "auth": None, "name": "n"}],
            "url": "amqp://u:***@h/",
        }

    def test_a_value_nested_deeper_than_the_stack_is_copied(self):
        value: object = "amqp://u:pw@h/"
        for _ in range(100_000):
            value = [value]
        copied = redact(value)
        for _ in range(100_000):
            assert isinstance(copied, list)
            copied = copied[0]
        assert copied == "amqp://u:***@h/"

    def test_with_a_bound_the_start_is_kept_and_masked(self):
        value = {"a": "x" * 10, "b": "amqp://u:secretpw@host/v", "c": "later"}
        # The bound falls inside b's password: what is kept of it is masked.
        assert redact(value, max_chars=24) == {"a": "x" * 10, "b": "amqp://u:" + MASK}
        assert redact(value, max_chars=1000) == redact(value)
