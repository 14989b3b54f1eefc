"""A creation range as whole UTC days of ``addendum_days`` (migration 0011) and two edges.

The creation filters (``created_after`` > t, ``created_before`` < t, ``created_on`` a
UTC day) together make one range of instants [lo, hi). Its addendums are those of the
days from lo's to the one of hi's last instant, less the first day's before lo (the
head) and the last day's from hi on (the tail). Days are summed from their counter
rows; the head and the tail are counted from the index (created_at, id), each inside
one day. Instants are whole microseconds on both databases, so "after t" is "from
t + 1 µs".
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

from cloudadmin.billing.addendums.schemas import AddendumQuery

_EPOCH = date(1970, 1, 1)
_US = timedelta(microseconds=1)
_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)


def day_number(t: datetime) -> int:
    """Days since 1970-01-01 of the UTC day of ``t``, as the triggers compute it."""
    return (t.astimezone(UTC).date() - _EPOCH).days


def utc_day(d: date) -> tuple[datetime, datetime]:
    """The first and the last instant (inclusive) of UTC day ``d``: the day after
    9999-12-31 does not exist, so the end is never a next midnight."""
    return (
        datetime(d.year, d.month, d.day, tzinfo=UTC),
        datetime(d.year, d.month, d.day, 23, 59, 59, 999_999, tzinfo=UTC),
    )


def _day(day: int) -> tuple[datetime, datetime]:
    return utc_day(_EPOCH + timedelta(days=day))


class DayRange(NamedTuple):
    """Parameters of repository.count."""

    first_day: int
    last_day: int
    head_from: datetime  # the first day's addendums in [head_from, head_to) are not in range
    head_to: datetime
    tail_from: datetime  # nor are the last day's in [tail_from, tail_last]
    tail_last: datetime


def creation_range(q: AddendumQuery) -> tuple[datetime | None, datetime | None] | None:
    """[lo, hi) of ``q``'s creation filters (None: open on that side), or None when no
    instant can match."""
    lows: list[datetime] = []
    highs: list[datetime] = []
    if q.created_after is not None:
        if q.created_after >= _LAST:
            return None
        lows.append(q.created_after + _US)
    if q.created_on is not None:
        start, last = utc_day(q.created_on)
        lows.append(start)
        if last < _LAST:
            highs.append(last + _US)
    if q.created_before is not None:
        highs.append(q.created_before)
    lo = max(lows) if lows else None
    hi = min(highs) if highs else None
    if hi is not None and (hi <= _FIRST or (lo is not None and lo >= hi)):
        return None
    return lo, hi


def day_range(lo: datetime | None, hi: datetime | None) -> DayRange:
    first_day = day_number(lo if lo is not None else _FIRST)
    last_day = day_number(hi - _US if hi is not None else _LAST)
    head_from = _day(first_day)[0]
    # An open side has an empty edge: [x, x) and [LAST, LAST - 1 µs].
    tail_from, tail_last = (hi, _day(last_day)[1]) if hi is not None else (_LAST, _LAST - _US)
    return DayRange(
        first_day, last_day, head_from, lo if lo is not None else head_from, tail_from, tail_last
    )
