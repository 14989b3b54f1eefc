"""How the list counts its matches, exactly, without scanning a million rows.

Triggers (migrations 0005 and 0011) keep three tables of counts in the addendums' own
transactions: per (status, product), per (client, reseller, status, product) and per
UTC day of creation. A query whose filters and scope only involve those columns is
counted by summing counter rows; any other query counts the matching addendums
(docs/billing.md, "Counting"). Which counters can answer a filter is declared by its
spec (filters.FILTERS).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import repository
from cloudadmin.billing.addendums.creation_days import DayRange, creation_range, day_range
from cloudadmin.billing.addendums.filters import (
    SPECS,
    Counter,
    CountsShape,
    Where,
    counts_where,
    product_ids,
)
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.db import driver

# A company search that names more clients keeps its name condition in the page's
# statement: the list would be sent back whole with every page.
NAMED_AT_MOST = 1_000


@dataclass(frozen=True)
class Counted:
    total: int
    # Every match's id lies in [low, high] when known (the creation days' bounds).
    ids: tuple[int, int] | None = None
    # The clients a company search names, when its count found them (PostgreSQL).
    named_clients: list[int] | None = None


@dataclass(frozen=True)
class FromTotals:
    """A sum over ``addendum_totals``."""

    statuses: list[str] | None
    products: list[int] | None


@dataclass(frozen=True)
class FromCounts:
    """A sum over ``addendum_counts``."""

    shape: CountsShape
    params: dict[str, Any]


@dataclass(frozen=True)
class FromDays:
    """Creation days from ``addendum_days`` and two edges; None: an empty range."""

    days: DayRange | None


@dataclass(frozen=True)
class FromRows:
    """``COUNT(*)`` of the matching addendums."""

    where: Where


Count = FromTotals | FromCounts | FromDays | FromRows


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
    if counter is Counter.TOTALS:
        products = product_ids(q)
        return FromTotals(
            None if q.status is None else list(q.status),
            None if products is None else sorted(products),
        )
    if counter is Counter.COUNTS:
        return FromCounts(*counts_where(q, caller, where.shape.dialect))
    return FromRows(where)


def one_statement(how: Count) -> tuple[driver.Static, Mapping[str, Any]] | None:
    """The count as one statement of one value and its parameters, when it is one (a
    sum of counter rows, or COUNT(*)), so that it can ride along with the page."""
    if isinstance(how, FromCounts):
        return repository.counts_statement(how.shape), how.params
    if isinstance(how, FromRows):
        return repository.count_statement(how.where.shape), how.where.params
    return None


async def count(conn: AsyncConnection, how: Count) -> Counted:
    if isinstance(how, FromTotals):
        return Counted(
            await repository.sum_totals(conn, statuses=how.statuses, products=how.products)
        )
    if isinstance(how, FromCounts):
        if how.shape.company and how.shape.dialect == "postgresql":
            total, named = await repository.sum_counts_naming(conn, how.shape, how.params)
            return Counted(total, named_clients=named if len(named) <= NAMED_AT_MOST else None)
        return Counted(await repository.sum_counts(conn, how.shape, how.params))
    if isinstance(how, FromDays):
        if how.days is None:
            return Counted(0)
        total, low, high = await repository.count_days(conn, how.days)
        return Counted(total, None if low is None or high is None else (low, high))
    return Counted(await repository.count_rows(conn, how.where))
