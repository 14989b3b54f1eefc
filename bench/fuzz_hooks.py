"""Schemathesis hooks for bench/fuzz.py (loaded through SCHEMATHESIS_HOOKS).

`subscribe_amqp_test` connects to the broker its body names. Generated connection
strings name arbitrary hosts, and fuzzing must never aim traffic off this machine: just
before each call, the host of that connection string becomes 127.0.0.1 port 9 (nothing
listens there), and a string whose host cannot be rewritten is replaced whole. The rest
of the string (scheme, user, password, vhost, query) stays as generated.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import schemathesis

LOOPBACK = "127.0.0.1:9"
FALLBACK = f"amqp://guest:guest@{LOOPBACK}/"
PROBING = ("/subscribe_amqp_test",)


def loopback(connection_string: str) -> str:
    try:
        parts = urlsplit(connection_string)
        user, at, _ = parts.netloc.rpartition("@")
        rewritten = urlunsplit(parts._replace(netloc=f"{user}{at}{LOOPBACK}"))
        check = urlsplit(rewritten)
        if check.hostname == "127.0.0.1" and check.port == 9:
            return rewritten
    except ValueError:
        pass
    return FALLBACK


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if not case.operation.path.endswith(PROBING) or not isinstance(case.body, dict):
        return
    value = case.body.get("connection_string")
    if isinstance(value, str):
        case.body["connection_string"] = loopback(value)
