"""Queries of the addendum list: the page, its count, and the clients matched by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Row, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums.names import fold
from cloudadmin.billing.addendums.tables import COUNTS, TOTALS, A, C, addendums, clients

# Order matters: service._out unpacks the row (with company_name last).
PAGE_COLUMNS = (
    A.id, A.client_id, A.status, A.active_start, A.active_end, A.created_at,
    A.currency_id, A.currency_char_code, A.currency_symbol, A.plan_id, A.plan_name,
    A.product_id, A.product_name, A.product_internal_name,
)  # fmt: skip


async def _core(session: AsyncSession, stmt: Any, params: Any = None) -> Any:
    """Run a Core SELECT on the session's connection (in its transaction, if it has
    one): these statements read columns, never ORM entities, so the ORM's execution
    path would be pure cost on every request."""
    return await (await session.connection()).execute(stmt, params)


def dialect_of(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


async def client_ids_named(session: AsyncSession, text: str) -> list[int]:
    """Ids of the clients whose company name contains ``text``, ignoring case.

    Folded in Python so that the match is the same on both databases; the clients
    table is small next to the addendums (10,000 accounts: a few milliseconds).
    """
    needle = fold(text)
    rows = await _core(session, select(C.id, C.company_name))
    return [cid for cid, name in rows if needle in fold(name or "")]


async def page(
    session: AsyncSession,
    where: Sequence[ColumnElement[bool]],
    order: Sequence[Any],
    *,
    limit: int,
    offset: int,
) -> Sequence[Row[Any]]:
    stmt = (
        select(*PAGE_COLUMNS, C.company_name)
        .select_from(addendums.outerjoin(clients, C.id == A.client_id))
        .where(*where)
        .order_by(*order)
        .limit(limit)
        .offset(offset)
    )
    return (await _core(session, stmt)).all()


async def count_rows(session: AsyncSession, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.count()).select_from(addendums).where(*where)
    return int((await _core(session, stmt)).scalar_one())


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
    session: AsyncSession, *, statuses: Sequence[str] | None, products: Sequence[int] | None
) -> int:
    """Addendums with one of ``statuses`` and ``products`` (None: any), from the totals."""
    stmt = _TOTALS[statuses is not None, products is not None]
    params = {"statuses": list(statuses or ()), "products": list(products or ())}
    return int((await _core(session, stmt, params)).scalar_one())


async def table_rows(session: AsyncSession) -> int:
    """All addendums, from the counters."""
    return await sum_totals(session, statuses=None, products=None)


async def sum_counts(session: AsyncSession, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.coalesce(func.sum(COUNTS.n), 0)).where(*where)
    return int((await _core(session, stmt)).scalar_one())
