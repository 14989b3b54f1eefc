"""Parsing of instants given in query strings."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INSTANT = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$"
)


def parse_instant(text: str, *, allow_date: bool = False) -> datetime:
    """ISO 8601 / RFC 3339 instant in UTC (``T`` or a space); naive means UTC.

    With ``allow_date`` a bare date means its midnight UTC. Raises ValueError.
    """
    text = text.strip()
    if allow_date and _DATE.match(text):
        d = date.fromisoformat(text)
        return datetime(d.year, d.month, d.day, tzinfo=UTC)
    if not _INSTANT.match(text):
        raise ValueError("Enter a valid date/time, e.g. 2025-05-15T12:00:00Z.")
    value = datetime.fromisoformat(text.replace(" ", "T", 1).replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is in year 0 in UTC
        raise ValueError("The date/time is out of range once in UTC.") from None


_DURATION = re.compile(r"^(\d{1,6})([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``2w``, ``90m``, ``45s``. Raises ValueError."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise ValueError("Enter a duration such as 30d, 12h or 2w.")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def parse_expiry(text: str, now: datetime) -> datetime:
    """When something expires: an instant or a date (its midnight UTC), or a duration
    from ``now``. Raises ValueError, also when it is not in the future."""
    if _DURATION.match(text.strip()):
        value = now + parse_duration(text)
    else:
        try:
            value = parse_instant(text, allow_date=True)
        except ValueError:
            raise ValueError(
                "Enter a date (2030-01-31), a date and time (2030-01-31T12:00:00Z) or a "
                "duration (30d, 12h, 2w)."
            ) from None
    if value <= now:
        raise ValueError("Must be in the future.")
    return value


def parse_date(text: str) -> date:
    text = text.strip()
    if not _DATE.match(text):
        raise ValueError("Enter a valid date, e.g. 2025-05-15.")
    return date.fromisoformat(text)


def isoformat_z(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
