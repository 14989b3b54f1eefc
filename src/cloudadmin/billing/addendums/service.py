"""Addendum listing , scoped per docs/access.md."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import URL

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters, repository
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
    (id_, client_id, status, start, end, created_at, currency_id, char_code, symbol,
     plan_id, plan_name, product_id, product_name, internal_name, company_name) = row
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


class _Plan(NamedTuple):
    order: tuple[Any, ...]
    walk: bool = False  # the reseller's scope written for a walk in id order
    id_range: tuple[int, int] | None = None  # walk the primary key between these ids


def _walked(q: AddendumQuery, total: int, span: int) -> float:
    """Rows walked in id order to fill the page, when ``total`` matches are spread
    evenly over ``span`` rows."""
    return (q.offset + q.limit) * span / total


async def _plan(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery, counted: counting.Counted,
    order: tuple[Any, ...],
) -> _Plan:
    descending = filters.id_first(q.ordering)
    if descending is None:
        return _Plan(order)
    total = counted.total
    if counted.ids is not None:
        low, high = counted.ids
        if _walked(q, total, high - low + 1) <= WALK_AT_MOST:
            return _Plan(order, id_range=counted.ids)
    if total <= SORT_AT_MOST:
        return _Plan(filters.by_id_expression(descending))
    if caller.is_reseller:
        rows = await repository.table_rows(conn)
        if _walked(q, total, rows) <= WALK_AT_MOST:
            return _Plan(order, walk=True)
    return _Plan(order)


async def list_addendums(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery, *, url: URL
) -> dict[str, Any]:
    """The page as schemas.AddendumPage has it, in plain dicts (see _out)."""
    dialect = repository.dialect_of(conn)
    order = filters.order_by(q.ordering, dialect)  # a bad field is a 400 before any query
    company_ids = None
    if q.company_name is not None:
        company_ids = await repository.client_ids_named(conn, q.company_name)
    where = filters.where(q, caller, dialect, company_ids=company_ids)
    counted = await counting.count(conn, q, caller, where)
    total = counted.total
    rows: Sequence[Any] = []
    if q.offset < total:
        plan = await _plan(conn, caller, q, counted, order)
        if plan.walk or plan.id_range is not None:
            where = filters.where(q, caller, dialect, company_ids=company_ids,
                                  walk=plan.walk, id_range=plan.id_range)
        rows = await repository.page(conn, where, plan.order, limit=q.limit, offset=q.offset)
    nxt, prev = page_links(url, count=total, limit=q.limit, offset=q.offset)
    return {"count": total, "next": nxt, "previous": prev,
            "results": [_out(r, q.active_at) for r in rows]}


async def get_addendum(conn: AsyncConnection, caller: Caller, addendum_id: int) -> dict[str, Any]:
    """One addendum the caller would see in the list, as the list writes it: the list's
    scope and ``id`` filter, its page statement (one row), its item. Any other id is 404."""
    q = AddendumQuery(id=addendum_id)
    dialect = repository.dialect_of(conn)
    where = filters.where(q, caller, dialect)
    rows = await repository.page(conn, where, filters.order_by(None, dialect), limit=1, offset=0)
    if not rows:
        raise NotFound("Addendum not found.")
    return _out(rows[0], None)
