"""Queries of the addendum list: the page, its count, and the clients matched by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.billing.addendums.names import fold
from cloudadmin.billing.addendums.tables import COUNTS, TOTALS, A, C, addendums, clients
from cloudadmin.db import driver

# Order matters: service._out unpacks the row (with company_name last).
PAGE_COLUMNS = (
    A.id, A.client_id, A.status, A.active_start, A.active_end, A.created_at,
    A.currency_id, A.currency_char_code, A.currency_symbol, A.plan_id, A.plan_name,
    A.product_id, A.product_name, A.product_internal_name,
)  # fmt: skip


async def _core(conn: AsyncConnection, stmt: Any, params: Any = None) -> Sequence[Any]:
    """The rows of a Core SELECT (on a read's connection, straight on the driver:
    db/driver.py): these statements read columns, never ORM entities, so the ORM's
    execution path would be pure cost on every request."""
    return await driver.fetch(conn, stmt, params)


def dialect_of(conn: AsyncConnection) -> str:
    return conn.dialect.name


async def client_ids_named(conn: AsyncConnection, text: str) -> list[int]:
    """Ids of the clients whose company name contains ``text``, ignoring case.

    Folded in Python so that the match is the same on both databases; the clients
    table is small next to the addendums (10,000 accounts: a few milliseconds).
    """
    needle = fold(text)
    rows = await _core(conn, select(C.id, C.company_name))
    return [cid for cid, name in rows if needle in fold(name or "")]


async def page(
    conn: AsyncConnection,
    where: Sequence[ColumnElement[bool]],
    order: Sequence[Any],
    *,
    limit: int,
    offset: int,
) -> Sequence[Any]:
    stmt = (
        select(*PAGE_COLUMNS, C.company_name)
        .select_from(addendums.outerjoin(clients, C.id == A.client_id))
        .where(*where)
        .order_by(*order)
        .limit(limit)
        .offset(offset)
    )
    return await _core(conn, stmt)


async def count_rows(conn: AsyncConnection, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.count()).select_from(addendums).where(*where)
    return int(await driver.scalar(conn, stmt))


def _totals_statement(by_status: bool, by_product: bool) -> Any:
    stmt = select(func.coalesce(func.sum(TOTALS.n), 0))
    if by_status:
        stmt = stmt.where(TOTALS.status.in_(bindparam("statuses", expanding=True)))
    if by_product:
        stmt = stmt.where(TOTALS.product_id.in_(bindparam("products", expanding=True)))
    return stmt


# Built once (the unfiltered operator's count runs on most list requests).
_TOTALS = {(s, p): _totals_statement(s, p) for s in (False, True) for p in (False, True)}


async def sum_totals(
    conn: AsyncConnection, *, statuses: Sequence[str] | None, products: Sequence[int] | None
) -> int:
    """Addendums with one of ``statuses`` and ``products`` (None: any), from the totals."""
    stmt = _TOTALS[statuses is not None, products is not None]
    params = {"statuses": list(statuses or ()), "products": list(products or ())}
    return int(await driver.scalar(conn, stmt, params))


async def table_rows(conn: AsyncConnection) -> int:
    """All addendums, from the counters."""
    return await sum_totals(conn, statuses=None, products=None)


async def sum_counts(conn: AsyncConnection, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.coalesce(func.sum(COUNTS.n), 0)).where(*where)
    return int(await driver.scalar(conn, stmt))
