"""Parsing of the ``Authorization: apikey <id>_<secret>`` header."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi.security import APIKeyHeader

from cloudadmin.errors import NotAuthenticated, TokenNotValid
from cloudadmin.kit.ints import INT32_MAX

_TOKEN = re.compile(r"^(\d{1,10})[_$](\S+)$")

# The scheme of every authenticated operation ("APIKey"), for the OpenAPI document only
# (web/openapi.py): authentication reads the header itself (auth/request_caller.py), for
# exact errors. As a dependency of web's get_caller it was solved on every request, and
# a security scheme's bookkeeping in FastAPI's dependency solving cost 30-60 µs of each
# (docs/performance.md, "The list's request path"), for one header lookup.
API_KEY_SCHEME = APIKeyHeader(
    name="Authorization",
    scheme_name="APIKey",
    description="`apikey <id>_<secret>`",
    auto_error=False,
)


@dataclass(frozen=True, slots=True)
class PresentedKey:
    key_id: int
    secret: str


def parse_token(token: str) -> PresentedKey | None:
    """``<id>_<secret>`` (or the legacy ``<id>$<secret>``), else None."""
    match = _TOKEN.match(token)
    if match is None:
        return None
    key_id = int(match.group(1))
    if key_id > INT32_MAX:
        return None
    return PresentedKey(key_id, match.group(2))


def parse_authorization(header: str | None) -> PresentedKey:
    if header is None or not header.strip():
        raise NotAuthenticated()
    scheme, _, token = header.strip().partition(" ")
    # RFC 9110: the auth scheme is case-insensitive.
    if scheme.lower() != "apikey":
        raise TokenNotValid("Authorization header must be 'apikey <key>'.")
    parsed = parse_token(token.strip())
    if parsed is None:
        raise TokenNotValid("Malformed API key.")
    return parsed
