"""Parsing of the ``Authorization: apikey <id>_<secret>`` header."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cloudadmin.errors import NotAuthenticated, TokenNotValid
from cloudadmin.kit.ints import INT32_MAX

_TOKEN = re.compile(r"^(\d{1,10})[_$](\S+)$")


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
