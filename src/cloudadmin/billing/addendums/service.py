"""The addendum list, scoped per docs/access.md, one way through: the query (parsed by
schemas.py) is planned (plan.py, no database), run (repository.py: the count and the
page in as few statements as the plan allows) and shaped for the wire here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic_core import to_json
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import URL

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import fields, filters, ordering, repository, shaping
from cloudadmin.billing.addendums.plan import plan
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.errors import NotFound
from cloudadmin.kit.pagination import page_links

__all__ = ["get_addendum", "list_addendums", "plan", "status_at"]


def status_at(status: str, start: datetime, end: datetime | None, at: datetime) -> str:
    """The status an addendum had at ``at``: upcoming before its period, stopped from its
    end on; inside the period its current status, an upcoming one counting as active."""
    if at < start:
        return "upcoming"
    if end is not None and at >= end:
        return "stopped"
    return "active" if status == "upcoming" else status


def _page_item() -> Callable[[Any], dict[str, Any]]:
    """One addendum as the wire has it (schemas.Addendum) from a page's row
    (statements.PAGE_COLUMNS, then the client's name), as a plain dict: the list is the
    hottest read of the API and builds up to 100 of these per request, so the function
    is written from the field table once (shaping.py) as the unpacking and the literal
    a hand would write. Instants stay datetimes (UTC): to_json writes them as RFC 3339
    with a Z, as isoformat_z does."""
    names = [f"c{i}" for i in range(len(fields.PAGE_FIELDS) + 1)]
    at = {field.column: name for field, name in zip(fields.PAGE_FIELDS, names, strict=False)}

    def value(field: fields.AddendumField) -> str:
        if field.origin == fields.JOINED:  # the client's name; no client: the empty name
            return f'({names[-1]} or "")'
        return at[field.column]

    written = tuple(f for f in fields.WIRE if f.origin != fields.COMPUTED)
    prelude = f"({', '.join(names)},) = row"
    literal = shaping.dict_literal(fields.layout(written), value)
    return shaping.build("page_item", literal, prelude=prelude)


_item: Callable[[Any], dict[str, Any]] = _page_item()
# Where status_at_active_at's inputs are in the row.
_STATUS, _START, _END = (
    [f.column for f in fields.PAGE_FIELDS].index(c)
    for c in ("status", "active_start", "active_end")
)


def _out(row: Any, active_at: datetime | None) -> dict[str, Any]:
    item: dict[str, Any] = _item(row)
    if active_at is not None:
        item["status_at_active_at"] = status_at(row[_STATUS], row[_START], row[_END], active_at)
    return item


async def list_addendums(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery, *, url: URL
) -> bytes:
    """The page as schemas.AddendumPage has it, as JSON: planned (plan.py), run
    (repository.py), shaped here. The items come written by the database when the plan
    says so (plan.Plan.database_writes), else are written here from the rows."""
    found = await repository.run(conn, plan(q, caller, repository.dialect_of(conn)))
    items = found.text if found.text is not None else _written(found.rows, q.active_at)
    return _answer(url, q, found.total, items)


def _written(rows: Sequence[Any], active_at: datetime | None) -> bytes:
    """The items of ``rows`` as the inside of a JSON array: what items_json writes."""
    if active_at is None:
        return to_json([_item(r) for r in rows])[1:-1]
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
