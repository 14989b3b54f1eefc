"""Redaction of secrets in request bodies and connection strings."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

MASK = "***"
SECRET_KEY_NAMES = re.compile(r"(password|passwd|secret|token|api_?key|^key$)", re.I)
_URL_PASSWORD = re.compile(r"^([a-z][a-z0-9+.\-]*://[^:/@\s]*:)([^@\s]*)(@)", re.I)


def mask_url_password(url: str) -> str:
    """``amqp://user:pw@host/vh`` -> ``amqp://user:***@host/vh``; other strings unchanged."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", url)


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
