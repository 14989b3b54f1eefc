"""The addendum list, scoped per docs/access.md, in one pass per request: the query
(parsed by schemas) is planned once (filters, how to count, the order), counted, its
page read the way the count says is cheap, and shaped for the wire."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import to_json
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import URL

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters, ordering, repository
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.errors import NotFound
from cloudadmin.kit.pagination import page_links


def status_at(status: str, start: datetime, end: datetime | None, at: datetime) -> str:
    """The status an addendum had at ``at``: upcoming before its period, stopped from its
    end on; inside the period its current status, an upcoming one counting as active."""
    if at < start:
        return "upcoming"
    if end is not None and at >= end:
        return "stopped"
    return "active" if status == "upcoming" else status


def _out(row: Any, active_at: datetime | None) -> dict[str, Any]:
    """One addendum as the wire has it (schemas.Addendum), as a plain dict: the list is
    the hottest read of the API and builds up to 100 of these per request. Instants stay
    datetimes (UTC): to_json writes them as RFC 3339 with a Z, as isoformat_z does."""
    (
        id_,
        client_id,
        status,
        start,
        end,
        created_at,
        currency_id,
        char_code,
        symbol,
        plan_id,
        plan_name,
        product_id,
        product_name,
        internal_name,
        company_name,
    ) = row
    item: dict[str, Any] = {
        "id": id_,
        "client_id": client_id,
        "client": {"id": client_id, "company_name": company_name or ""},
        "status": status,
        "active_range": {"start": start, "end": end},
        "created_at": created_at,
        "currency": {"id": currency_id, "char_code": char_code, "symbol": symbol},
        "plan": {"id": plan_id, "name": plan_name},
        "product": {"id": product_id, "name": product_name, "internal_name": internal_name},
    }
    if active_at is not None:
        item["status_at_active_at"] = status_at(status, start, end, active_at)
    return item


# The exact count is known before the page is read; for the default (id) order it says
# which way of reading the page is cheap (docs/billing.md, "Reading a page").
SORT_AT_MOST = 20_000  # matches: read them through the filters' indexes and sort
WALK_AT_MOST = 20_000  # rows walked in id order to fill the page


@dataclass(frozen=True)
class Plan:
    """How a request is answered: its filters, how it is counted, its order."""

    where: filters.Where
    count: counting.Count
    order: Order
    # None unless the order is id first; then whether it is descending.
    id_descending: bool | None


@dataclass(frozen=True)
class PageRead:
    """The page's statement: the plan's filters, perhaps written another way, and order."""

    where: filters.Where
    order: Order


def plan(q: AddendumQuery, caller: Caller, dialect: str) -> Plan:
    """Everything that can be decided before the database is asked."""
    order = ordering.order_by(q.ordering, dialect)  # a bad field is a 400 before any query
    where = filters.where(q, caller, dialect)
    return Plan(where, counting.plan(q, caller, where), order, ordering.id_first(q.ordering))


def _walked(q: AddendumQuery, total: int, span: int) -> float:
    """Rows walked in id order to fill the page, when ``total`` matches are spread
    evenly over ``span`` rows."""
    return (q.offset + q.limit) * span / total


def _index_ordered(where: filters.Where) -> bool:
    """Whether one index gives exactly the matches in id order: its filters' equalities
    and nothing else (an index range, read as far as the page needs)."""
    shape = where.shape
    if shape.scope is not filters.Scope.OPERATOR or not all(p.one for p in shape.parts):
        return False
    return shape.names in filters.ID_ORDERED


def _needs_count(plan: Plan) -> bool:
    """Whether the page's statement depends on the count: only for the default (id-
    first) order, and not when one index gives the matches in that order."""
    return plan.id_descending is not None and not _index_ordered(plan.where)


async def _page_read(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery, plan: Plan, counted: counting.Counted
) -> PageRead:
    """How to read the page, once the count is known (docs/billing.md, "Reading a
    page"): only the default (id-first) order has a choice."""
    where, order = plan.where, plan.order
    if not _needs_count(plan):
        return PageRead(where, order)
    if counted.named_clients is not None:
        where = where.rewritten(named_clients=counted.named_clients)
        if _index_ordered(where):  # one client: its index gives the page in id order
            return PageRead(where, order)
    descending = bool(plan.id_descending)
    total = counted.total
    if counted.ids is not None:
        low, high = counted.ids
        if _walked(q, total, high - low + 1) <= WALK_AT_MOST:
            return PageRead(where.rewritten(id_range=counted.ids), order)
    if total <= SORT_AT_MOST:
        return PageRead(where, ordering.by_id_expression(descending))
    if caller.is_reseller:
        rows = await repository.table_rows(conn)
        if _walked(q, total, rows) <= WALK_AT_MOST:
            return PageRead(where.rewritten(scope=filters.Scope.RESELLER_WALK), order)
    return PageRead(where, order)


async def list_addendums(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery, *, url: URL
) -> bytes:
    """The page as schemas.AddendumPage has it, as JSON: planned, counted, read, shaped.
    The items are written by the database where that pays (_database_writes) and it
    can (repository.writes_items), else here from the rows."""
    how = plan(q, caller, repository.dialect_of(conn))
    together = None if _needs_count(how) else counting.one_statement(how.count)
    as_text = _database_writes(q, how) and repository.writes_items(conn)
    if together is not None and as_text:
        # One round trip instead of two: a page that does not depend on the count is
        # read with it (a third of a selective request's statements).
        total, items = await repository.counted_page_text(
            conn, how.where, how.order, *together, limit=q.limit, offset=q.offset
        )
        return _answer(url, q, total, items)
    if together is not None:
        read_together = await repository.counted_page(
            conn, how.where, how.order, *together, limit=q.limit, offset=q.offset
        )
        if read_together is not None:  # an empty page says nothing of the count
            total, rows = read_together
            return _answer(url, q, total, _written(rows, q.active_at))
    counted = await counting.count(conn, how.count)
    total = counted.total
    if q.offset >= total or together is not None:
        return _answer(url, q, total, b"")
    read = await _page_read(conn, caller, q, how, counted)
    if as_text:
        items = await repository.page_text(
            conn, read.where, read.order, limit=q.limit, offset=q.offset
        )
        return _answer(url, q, total, items)
    rows = await repository.page(conn, read.where, read.order, limit=q.limit, offset=q.offset)
    return _answer(url, q, total, _written(rows, q.active_at))


# The database writes the items (items_json) only where its own share of the request is
# light: a count from the counters and a page near the start. There the service's CPU is
# what limits the list, and the rows' decoding and writing were a fifth of it; a count of
# the rows themselves or a deep offset keeps the database busy instead, and the items'
# writing would add to it (docs/performance.md, "2026-11-27 (morning)").
WRITTEN_AT_MOST = 1_000  # offset + limit


def _database_writes(q: AddendumQuery, how: Plan) -> bool:
    """Whether the database is to write the page's items (not with ``active_at``, whose
    status at that instant is worked out here)."""
    return (
        q.active_at is None
        and not isinstance(how.count, counting.FromRows)
        and q.offset + q.limit <= WRITTEN_AT_MOST
    )


def _written(rows: Sequence[Any], active_at: datetime | None) -> bytes:
    """The items of ``rows`` as the inside of a JSON array: what items_json writes."""
    return to_json([_out(r, active_at) for r in rows])[1:-1]


def _answer(url: URL, q: AddendumQuery, total: int, items: bytes) -> bytes:
    """The page's JSON, with its items already written: to_json of the whole page would
    write the same bytes."""
    nxt, prev = page_links(url, count=total, limit=q.limit, offset=q.offset)
    head = to_json({"count": total, "next": nxt, "previous": prev})
    return head[:-1] + b',"results":[' + items + b"]}"


async def get_addendum(conn: AsyncConnection, caller: Caller, addendum_id: int) -> dict[str, Any]:
    """One addendum the caller would see in the list, as the list writes it: the list's
    scope and ``id`` filter, its page statement (one row), its item. Any other id is 404."""
    q = AddendumQuery(id=addendum_id)
    dialect = repository.dialect_of(conn)
    where = filters.where(q, caller, dialect)
    rows = await repository.page(conn, where, ordering.order_by(None, dialect), limit=1, offset=0)
    if not rows:
        raise NotFound("Addendum not found.")
    return _out(rows[0], None)
