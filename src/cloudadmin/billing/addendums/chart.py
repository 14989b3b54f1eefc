"""Active addendums per product and month (the Admin Portal's billing chart; docs/portal.md,
"Billing"): for each of the last months (UTC), how many addendums of each product were
active at some instant of the month, among those the caller sees and the list's filters
match.

"Active at some instant of the month [m, m')" is the list's own rule for a period
[start, end) (docs/billing.md, "The active period"): ``start < m'`` and the period
reaches past ``m`` (an open end, or ``end > m``) and is not empty (``end > start``).

One grouped statement answers every month at once. Each matching addendum's period
covers a run of consecutive months of the window: its first month (from its start) and
its last (from its end), each a CASE over the months' bounds. The statement counts the
addendums per (product, first month, last month), at most products x 78 groups, and the
months in between are filled in here. So the database reads the matching rows once,
where a statement per month would read them twelve times (and a join with the months
would compare each row with every month).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import filters
from cloudadmin.billing.addendums.repository import dialect_of
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import A
from cloudadmin.billing.catalogue import PRODUCTS
from cloudadmin.db import driver
from cloudadmin.db.types import utcnow

MONTHS = 12


@dataclass(frozen=True)
class ProductMonths:
    """One product's active addendums, month by month (the window's order)."""

    product_id: int
    internal_name: str
    name: str
    counts: tuple[int, ...]


@dataclass(frozen=True)
class ActiveByMonth:
    """The window's months (their first days, oldest first) and a series per product
    that had any active addendum in it (by name)."""

    months: tuple[date, ...]
    products: tuple[ProductMonths, ...]

    @property
    def totals(self) -> tuple[int, ...]:
        return tuple(sum(p.counts[i] for p in self.products) for i in range(len(self.months)))


def month_starts(now: datetime, months: int = MONTHS) -> list[datetime]:
    """The first instants of the ``months`` months up to and including ``now``'s, and of
    the month after: ``months + 1`` bounds, in UTC."""
    year, month = now.astimezone(UTC).year, now.astimezone(UTC).month
    index = year * 12 + (month - 1) - (months - 1)
    return [
        datetime((index + i) // 12, (index + i) % 12 + 1, 1, tzinfo=UTC) for i in range(months + 1)
    ]


def _bound(i: int) -> Any:
    return bindparam(f"month_{i}", type_=A.active_start.type)


@lru_cache(maxsize=128)
def _statement(shape: filters.Shape, months: int) -> driver.Static:
    """(product, first month, last month, its product name, addendums) per group."""
    first = case(
        *((A.active_start < _bound(i + 1), i) for i in range(months - 1)), else_=months - 1
    )
    last = case(
        (A.active_end.is_(None), months - 1),
        *((A.active_end <= _bound(i + 1), i) for i in range(months - 1)),
        else_=months - 1,
    )
    in_window = [
        A.active_start < _bound(months),
        or_(
            A.active_end.is_(None),
            and_(A.active_end > _bound(0), A.active_end > A.active_start),
        ),
    ]
    first_month, last_month = first.label("first_month"), last.label("last_month")
    stmt: Select[Any] = (
        select(A.product_id, first_month, last_month, func.max(A.product_name), func.count())
        .where(*filters.clauses(shape), *in_window)
        .group_by(A.product_id, first_month, last_month)
    )
    return driver.Static(stmt)


async def active_by_month(
    conn: AsyncConnection,
    caller: Caller,
    q: AddendumQuery | None = None,
    *,
    now: datetime | None = None,
    months: int = MONTHS,
) -> ActiveByMonth:
    """Per product, the addendums active at some instant of each of the last ``months``
    months (``now``'s included), among those ``caller`` sees that ``q``'s filters match
    (its paging and ordering play no part)."""
    bounds = month_starts(now or utcnow(), months)
    where = filters.where(q or AddendumQuery(), caller, dialect_of(conn))
    params = {**where.params, **{f"month_{i}": b for i, b in enumerate(bounds)}}
    rows = await driver.fetch(conn, _statement(where.shape, months), params)
    counts: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for product_id, first, last, name, n in rows:
        series = counts.setdefault(product_id, [0] * months)
        for i in range(int(first), int(last) + 1):
            series[i] += int(n)
        names[product_id] = max(names.get(product_id, ""), name or "")
    products = [
        ProductMonths(pid, PRODUCTS.get(pid, ""), names[pid] or PRODUCTS.get(pid, ""), tuple(c))
        for pid, c in counts.items()
    ]
    products.sort(key=lambda p: (p.name.casefold(), p.product_id))
    return ActiveByMonth(tuple(b.date() for b in bounds[:-1]), tuple(products))
