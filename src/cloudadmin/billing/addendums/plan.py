"""The plan of a list request: a pure function of its filters, ordering, paging and
statistics (the count, the table's size), which the repository runs. No database.

Planned before anything is read: the filters (filters.py), how to count
(counting.py), the order (ordering.py), whether the count rides along with the page
and whether the database writes the items. Once the count is known, ``page_read``
says how the page is read cheaply (docs/billing.md, "Reading a page").
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters, ordering
from cloudadmin.billing.addendums.counting import Count, Counted
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.billing.addendums.schemas import AddendumQuery

# The exact count is known before the page is read; for the default (id) order it says
# which way of reading the page is cheap (docs/billing.md, "Reading a page").
SORT_AT_MOST = 20_000  # matches: read them through the filters' indexes and sort
WALK_AT_MOST = 20_000  # rows walked in id order to fill the page

# The database writes the items (items_json) only where its own share of the request is
# light: a count from the counters and a page near the start. There the service's CPU is
# what limits the list, and the rows' decoding and writing were a fifth of it; a count of
# the rows themselves or a deep offset keeps the database busy instead, and the items'
# writing would add to it (docs/performance.md, "The list's request path").
WRITTEN_AT_MOST = 1_000  # offset + limit


@dataclass(frozen=True)
class PageRead:
    """The page's statement: the plan's filters, perhaps written another way, and order."""

    where: filters.Where
    order: Order


@dataclass(frozen=True)
class Plan:
    """How a request is answered."""

    where: filters.Where
    count: Count
    order: Order
    # None unless the order is id first; then whether it is descending.
    id_descending: bool | None
    limit: int
    offset: int
    # The page's statement depends on the count (page_read), else it is this one.
    needs_count: bool
    # The count is read with the page, in one statement (counting.one_value).
    together: bool
    # The database writes the page's items as JSON text (items_json), else the rows.
    database_writes: bool

    @property
    def read(self) -> PageRead:
        """The page's statement when it does not depend on the count."""
        return PageRead(self.where, self.order)


def index_ordered(where: filters.Where) -> bool:
    """Whether one index gives exactly the matches in id order: its filters' equalities
    and nothing else (an index range, read as far as the page needs)."""
    shape = where.shape
    if shape.scope is not filters.Scope.OPERATOR or not all(p.one for p in shape.parts):
        return False
    return shape.names in filters.ID_ORDERED


def plan(q: AddendumQuery, caller: Caller, dialect: str) -> Plan:
    """Everything that can be decided before the database is asked (a bad ordering
    field is refused here, before any statement)."""
    order = ordering.order_by(q.ordering, dialect)
    where = filters.where(q, caller, dialect)
    count = counting.plan(q, caller, where)
    id_descending = ordering.id_first(q.ordering)
    needs_count = id_descending is not None and not index_ordered(where)
    # Not with active_at, whose status at that instant is worked out by the service.
    database_writes = (
        dialect == "postgresql"
        and q.active_at is None
        and not isinstance(count, counting.FromRows)
        and q.offset + q.limit <= WRITTEN_AT_MOST
    )
    together = not needs_count and counting.one_value(count)
    return Plan(
        where, count, order, id_descending, q.limit, q.offset, needs_count, together,
        database_writes,
    )  # fmt: skip


def _walked(how: Plan, total: int, span: int) -> float:
    """Rows walked in id order to fill the page, when ``total`` matches are spread
    evenly over ``span`` rows."""
    return (how.offset + how.limit) * span / total


def page_read(how: Plan, counted: Counted, table_rows: int | None = None) -> PageRead | None:
    """How to read the page once the count is known: only the default (id-first) order
    has a choice. None when it depends on ``table_rows`` (every addendum) and that is
    not given: a reseller's page of many matches."""
    where, order = how.where, how.order
    if not how.needs_count:
        return how.read
    if counted.named_clients is not None:
        where = where.rewritten(named_clients=counted.named_clients)
        if index_ordered(where):  # one client: its index gives the page in id order
            return PageRead(where, order)
    total = counted.total
    if counted.ids is not None:
        low, high = counted.ids
        if _walked(how, total, high - low + 1) <= WALK_AT_MOST:
            return PageRead(where.rewritten(id_range=counted.ids), order)
    if total <= SORT_AT_MOST:
        return PageRead(where, ordering.by_id_expression(bool(how.id_descending)))
    if where.shape.scope is filters.Scope.RESELLER:
        if table_rows is None:
            return None
        if _walked(how, total, table_rows) <= WALK_AT_MOST:
            return PageRead(where.rewritten(scope=filters.Scope.RESELLER_WALK), order)
    return PageRead(where, order)
