"""How the list counts its matches, exactly, without scanning a million rows: decided
here, from the request alone (no database; the repository runs it).

Triggers (migrations 0005 and 0011) keep three tables of counts in the addendums' own
transactions: per (status, product), per (client, reseller, status, product) and per
UTC day of creation. A query whose filters and scope only involve those columns is
counted by summing counter rows; any other query counts the matching addendums
(docs/billing.md, "Counting"). Which counters can answer a filter, and how, is declared
by its spec (filters.FILTERS; counter_filters.py writes it over the counter rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums.counter_filters import CounterShape, counter_where
from cloudadmin.billing.addendums.creation_days import DayRange, creation_range, day_range
from cloudadmin.billing.addendums.filters import SPECS, Counter, Where
from cloudadmin.billing.addendums.schemas import AddendumQuery

# A company search that names more clients keeps its name condition in the page's
# statement: the list would be sent back whole with every page.
NAMED_AT_MOST = 1_000


@dataclass(frozen=True)
class Counted:
    """What counting a request found: the statistics its page is planned with."""

    total: int
    # Every match's id lies in [low, high] when known (the creation days' bounds).
    ids: tuple[int, int] | None = None
    # The clients a company search names, when its count found them (PostgreSQL).
    named_clients: list[int] | None = None


@dataclass(frozen=True)
class FromCounters:
    """A sum over ``addendum_totals`` or ``addendum_counts``."""

    shape: CounterShape
    params: dict[str, Any]

    @property
    def names_clients(self) -> bool:
        """Whether the sum also names the clients of a company search (PostgreSQL)."""
        return self.shape.company and self.shape.dialect == "postgresql"


@dataclass(frozen=True)
class FromDays:
    """Creation days from ``addendum_days`` and two edges; None: an empty range."""

    days: DayRange | None


@dataclass(frozen=True)
class FromRows:
    """``COUNT(*)`` of the matching addendums."""

    where: Where


Count = FromCounters | FromDays | FromRows


def counter_for(where: Where, caller: Caller) -> Counter | None:
    """The counter table that can count ``where`` for ``caller`` (None: count the rows)."""
    given = [SPECS[name].counters for name in where.shape.names]
    if given and caller.is_operator and all(Counter.DAYS in c for c in given):
        return Counter.DAYS
    if not all(Counter.COUNTS in c for c in given):
        return None
    if caller.is_operator:
        return Counter.TOTALS if all(Counter.TOTALS in c for c in given) else Counter.COUNTS
    if caller.is_reseller:
        return Counter.COUNTS
    return None  # an account's own addendums (client or payer): few, counted directly


def plan(q: AddendumQuery, caller: Caller, where: Where) -> Count:
    counter = counter_for(where, caller)
    if counter is Counter.DAYS:
        bounds = creation_range(q)
        return FromDays(None if bounds is None else day_range(*bounds))
    if counter is not None:
        return FromCounters(*counter_where(q, caller, where, counter))
    return FromRows(where)


def one_value(how: Count) -> bool:
    """Whether the count rides along with the page as one value of its statement: a
    sum of ``addendum_counts`` rows (a company search's without naming its clients) or
    COUNT(*)."""
    if isinstance(how, FromCounters):
        return how.shape.table is Counter.COUNTS
    return isinstance(how, FromRows)


def naming(total: int, named: Sequence[int]) -> Counted:
    """A company search's count and the clients it names, kept when they are few."""
    return Counted(total, named_clients=list(named) if len(named) <= NAMED_AT_MOST else None)


def of_days(total: int, low: int | None, high: int | None) -> Counted:
    """A count of creation days, with the bounds of their ids when any was counted."""
    return Counted(total, None if low is None or high is None else (low, high))
