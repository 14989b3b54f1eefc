"""The addendum list's execution: runs a plan (plan.py) on the driver connection
(db/driver.py) in as few round trips as it allows, and gives the count and the page,
as rows or as the items' JSON text (plan.Plan.database_writes). The only module of the
list that talks to the database; its statements are statements.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.billing.addendums import counting, plan, statements
from cloudadmin.billing.addendums.counter_filters import CounterShape
from cloudadmin.billing.addendums.counting import Count, Counted, FromCounters, FromDays
from cloudadmin.billing.addendums.filters import Counter, Where
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.db import driver


@dataclass(frozen=True)
class Found:
    """A request's count and page: the items' JSON text (``text``) or the rows."""

    total: int
    text: bytes | None = None
    rows: Sequence[Any] = ()


def dialect_of(conn: AsyncConnection) -> str:
    return conn.dialect.name


async def run(conn: AsyncConnection, how: plan.Plan) -> Found:
    """The count and the page of ``how``: one statement when the count rides along
    with a page that does not depend on it, else the count, then the page the count
    says is cheap (and, for a reseller's page of many matches, the table's size)."""
    if how.together:
        found = await _counted_page(conn, how, text=how.database_writes)
        if found is not None:
            total, items = found
            return Found(total, items) if how.database_writes else Found(total, rows=items)
    counted = await count(conn, how.count)
    if how.offset >= counted.total or how.together:
        return Found(counted.total, b"" if how.database_writes else None)
    read = plan.page_read(how, counted)
    if read is None:
        read = plan.page_read(how, counted, await table_rows(conn))
        assert read is not None
    if how.database_writes:
        text = await page_text(conn, read.where, read.order, limit=how.limit, offset=how.offset)
        return Found(counted.total, text)
    rows = await page(conn, read.where, read.order, limit=how.limit, offset=how.offset)
    return Found(counted.total, rows=rows)


def _counted_together(how: Count) -> tuple[driver.Static, Mapping[str, Any]]:
    """The count as one statement of one value and its parameters (counting.one_value)."""
    if isinstance(how, FromCounters):
        return statements.counter_statement(how.shape), how.params
    assert isinstance(how, counting.FromRows)
    return statements.count_statement(how.where.shape), how.where.params


async def count(conn: AsyncConnection, how: Count) -> Counted:
    """The count a plan chose (counting.plan)."""
    if isinstance(how, FromCounters):
        if how.names_clients:
            stmt = statements.naming_statement(how.shape)
            ((total, named),) = await driver.fetch(conn, stmt, how.params)
            return counting.naming(int(total), named or ())
        return Counted(await _scalar(conn, statements.counter_statement(how.shape), how.params))
    if isinstance(how, FromDays):
        if how.days is None:
            return Counted(0)
        rows = await driver.fetch(conn, statements.DAYS_STATEMENT, how.days._asdict())
        total, low, high = rows[0]
        return counting.of_days(int(total), low, high)
    where = how.where
    return Counted(await _scalar(conn, statements.count_statement(where.shape), where.params))


async def _scalar(conn: AsyncConnection, stmt: driver.Static, params: Mapping[str, Any]) -> int:
    return int(await driver.scalar(conn, stmt, params))


async def table_rows(conn: AsyncConnection) -> int:
    """All addendums, from the counters."""
    return await _scalar(conn, statements.counter_statement(_EVERY_ROW), {})


_EVERY_ROW = CounterShape("any", Counter.TOTALS)


def _page_params(where: Where, limit: int, offset: int) -> dict[str, Any]:
    return {**where.params, "page_limit": limit, "page_offset": offset}


async def page(
    conn: AsyncConnection, where: Where, order: Order, *, limit: int, offset: int
) -> Sequence[Any]:
    """The page's rows (statements.PAGE_COLUMNS, then the client's name). ``order`` is
    a tuple from ordering.order_by or ordering.by_id_expression (the same object for the
    same order, so that it can key the statement)."""
    stmt = statements.page_statement(where.shape, order)
    return await driver.fetch(conn, stmt, _page_params(where, limit, offset))


async def page_text(
    conn: AsyncConnection, where: Where, order: Order, *, limit: int, offset: int
) -> bytes:
    """The page's items as the inside of a JSON array, UTF-8 (items_json); as page()."""
    stmt = statements.page_text_statement(where.shape, order)
    return bytes(await driver.scalar(conn, stmt, _page_params(where, limit, offset)))


async def _counted_page(
    conn: AsyncConnection, how: plan.Plan, *, text: bool
) -> tuple[int, Any] | None:
    """The count (a one-value statement, counting.one_value) and the page read together:
    the items' JSON text (``text``; an aggregate, so one row even for an empty page) or
    the rows (None when the page is empty, which says nothing of the count)."""
    count, count_params = _counted_together(how.count)
    where = how.where
    built = statements.counted_page_text_statement if text else statements.counted_page_statement
    params = {
        **_page_params(where, how.limit, how.offset),
        **{statements.TOTAL_PREFIX + name: value for name, value in count_params.items()},
    }
    rows = await driver.fetch(conn, built(where.shape, how.order, count), params)
    if text:
        ((items, total),) = rows
        return int(total), bytes(items)
    if not rows:
        return None
    return int(rows[0][-1]), [row[:-1] for row in rows]
