"""Redaction of secrets in request bodies and connection strings."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

MASK = "***"
# auth_header_value: the secret header of a webhook subscription (its name is not).
SECRET_KEY_NAMES = re.compile(
    r"(password|passwd|secret|token|api_?key|^key$|auth_header_value|^authorization$)", re.I
)
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*://", re.I)
_SPACE = re.compile(r"\s")


def password_span(text: str, start: int = 0) -> tuple[int, int] | None:
    """Where the password of the URL at ``text[start:]`` is (``user:<here>@host``), found
    by parsing the URL, not by searching for the password's text; None without one.

    The userinfo ends at the authority's last ``@`` (the authority ends at the first
    ``/``, ``?`` or ``#``). A string that is not a valid URL because its password holds
    a raw ``/`` or ``?`` (``u:pa/ss@host``) is masked up to its last ``@`` before any
    space: when in doubt, mask too much rather than show part of a password.
    """
    found = _SCHEME.match(text, start)
    if found is None:
        return None
    begin = found.end()
    space = _SPACE.search(text, begin)
    stop = space.start() if space else len(text)
    end = stop
    for ch in "/?#":
        at = text.find(ch, begin, end)
        if at != -1:
            end = at
    at_sign = text.rfind("@", begin, end)
    if at_sign == -1:
        at_sign = text.rfind("@", begin, stop)
    if at_sign == -1:
        return None
    colon = text.find(":", begin, at_sign)
    if colon == -1:
        return None
    return colon + 1, at_sign


def mask_url_password(text: str) -> str:
    """``amqp://user:pw@host/vh`` -> ``amqp://user:***@host/vh``, for every URL in
    ``text``; text without a URL password unchanged."""
    out: list[str] = []
    done = 0
    for found in _SCHEME.finditer(text):
        if found.start() < done:
            continue
        span = password_span(text, found.start())
        if span is None:
            continue
        out.append(text[done : span[0]])
        out.append(MASK)
        done = span[1]
    out.append(text[done:])
    return "".join(out)


def redact(value: Any) -> Any:
    """A copy of a decoded JSON value with every secret replaced by a mask."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and SECRET_KEY_NAMES.search(key):
                out[key] = MASK if item is not None else None
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str) and "://" in value:
        return mask_url_password(value)
    return value


def redact_query(query: str) -> str:
    """A raw query string with the value of every secret parameter masked
    (``?password=x&a=1`` -> ``password=***&a=1``); unchanged when it names none."""
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(SECRET_KEY_NAMES.search(k) for k, _ in pairs):
        return query
    return urlencode([(k, MASK if SECRET_KEY_NAMES.search(k) else v) for k, v in pairs])
