"""Value types shared by the import records: ids, e-mails, instants, UUIDs, decimals.

Every failure raises ``PydanticCustomError`` so the message reaches the operator
as written here, without pydantic's "Value error, " prefix.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any, Literal, get_args, get_origin

from email_validator import EmailNotValidError, validate_email
from email_validator.rfc_constants import ATEXT, EMAIL_MAX_LENGTH
from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from cloudadmin.kit.ints import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

# Ids of rows in Integer columns (PostgreSQL int4), and of the BigInteger ones.
Id = Annotated[int, Field(ge=1, le=INT32_MAX)]
BigId = Annotated[int, Field(ge=1, le=INT64_MAX)]
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]


def _email(value: str) -> str:
    if not _valid_email(value):
        raise PydanticCustomError("email", "not a valid e-mail address")
    return value


# email_validator's verdict on an address whose part before the @ is plain ASCII (its own
# dot-atom: no quotes, no display name, no Unicode) and whose domain is ASCII letters,
# digits, dots and hyphens: the domain's verdict and the address's length (at most 254;
# ASCII keeps its length through email_validator's normalization). That is what
# email_validator itself checks for such an address, so the verdict is its verdict
# (tests/importer/test_email_field.py holds the two together).
_PLAIN_ADDRESS = re.compile(rf"[{ATEXT}]+(?:\.[{ATEXT}]+)*@([A-Za-z0-9.-]+)").fullmatch


def _valid_email(value: str) -> bool:
    """email_validator's verdict. It takes about 75 µs an address (some 7 s for the
    100,000 accounts of the ten-million-addendum document, which the bulk COPY it is
    measured against does not pay), most of it on the domain; a document's addresses
    share few domains, so a plain address costs one match and a cached domain verdict."""
    plain = _PLAIN_ADDRESS(value)
    if plain is None:
        return _checked_email(value)
    return len(value) <= EMAIL_MAX_LENGTH and _valid_domain(plain[1])


@lru_cache(maxsize=1 << 14)
def _valid_domain(domain: str) -> bool:
    return _checked_email(f"a@{domain}")  # the shortest plain part before the @


# The verdicts of a document's other addresses: the write pass validates each chunk
# again, and finds the first pass's verdicts here.
@lru_cache(maxsize=1 << 16)
def _checked_email(value: str) -> bool:
    try:
        # Deliverability needs DNS and says nothing about a snapshot; reserved test
        # domains (.test) are allowed because demo and test documents use them.
        validate_email(value, check_deliverability=False, test_environment=True)
    except EmailNotValidError:
        return False
    return True


# An e-mail field: a string of at most its own length that _email accepts.
ValidEmail = AfterValidator(_email)
Email = Annotated[str, Field(max_length=254), ValidEmail]

_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def _instant(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("timestamp", "must be an RFC 3339 timestamp string")
    match = _RFC3339.match(value)
    if match is None:
        raise PydanticCustomError(
            "timestamp", "not an RFC 3339 timestamp with Z or an offset (2025-05-15T12:00:00Z)"
        )
    day, clock, fraction, zone = match.groups()
    # datetime keeps microseconds; finer fractions are cut, not rounded into a carry.
    fraction = (fraction or "")[:7]
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        parsed = datetime.fromisoformat(f"{day}T{clock}{fraction}{zone}")
    except ValueError as exc:
        raise PydanticCustomError("timestamp", "not a valid date and time") from exc
    return parsed.astimezone(UTC)


# Stored in UTC whatever offset the document used.
Timestamp = Annotated[datetime, BeforeValidator(_instant)]


def _uuid(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("uuid", "must be a UUID string")
    try:
        parsed = uuid.UUID(value)
    except ValueError as exc:
        raise PydanticCustomError("uuid", "not a valid UUID") from exc
    if len(value) != 36:  # uuid.UUID also takes braces, URNs and bare hex
        raise PydanticCustomError("uuid", "not a valid UUID (8-4-4-4-12 hex digits)")
    return str(parsed)


# Canonical lower-case form, so the same id written twice is one row.
Uuid = Annotated[str, BeforeValidator(_uuid)]


def _cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        raise PydanticCustomError("cidr", "not a network in CIDR notation") from exc
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]


def api_literal(*annotations: Any) -> Any:
    """The ``Literal`` of the values an API schema's field allows (``X | None``,
    ``list[X]`` and the members of a union unwrapped), for an import record's field: a
    load takes exactly what the API's schema allows, from the one definition
    (docs/import.md, "Validation decisions")."""
    values: list[Any] = []

    def collect(annotation: Any) -> None:
        if get_origin(annotation) is Literal:
            values.extend(v for v in get_args(annotation) if v not in values)
        else:
            for arg in get_args(annotation):
                collect(arg)

    for annotation in annotations:
        collect(annotation)
    if not values:
        raise TypeError(f"no Literal in {annotations}")
    return Literal[tuple(values)]
