"""Queries of the addendum list: the page, its count, and the clients matched by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums.names import fold
from cloudadmin.db.models import Addendum, Client
from cloudadmin.db.models.billing import AddendumCount, AddendumTotal

A = Addendum

PAGE_COLUMNS = (
    A.id, A.client_id, A.status, A.active_start, A.active_end, A.created_at,
    A.currency_id, A.currency_char_code, A.currency_symbol, A.plan_id, A.plan_name,
    A.product_id, A.product_name, A.product_internal_name,
)  # fmt: skip


def dialect_of(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


async def client_ids_named(session: AsyncSession, text: str) -> list[int]:
    """Ids of the clients whose company name contains ``text``, ignoring case.

    Folded in Python so that the match is the same on both databases; the clients
    table is small next to the addendums (10,000 accounts: a few milliseconds).
    """
    needle = fold(text)
    rows = await session.execute(select(Client.id, Client.company_name))
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
        select(*PAGE_COLUMNS, Client.company_name)
        .select_from(A)
        .outerjoin(Client, Client.id == A.client_id)
        .where(*where)
        .order_by(*order)
        .limit(limit)
        .offset(offset)
    )
    return (await session.execute(stmt)).all()


async def count_rows(session: AsyncSession, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.count()).select_from(A).where(*where)
    return int((await session.execute(stmt)).scalar_one())


async def sum_totals(session: AsyncSession, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.coalesce(func.sum(AddendumTotal.n), 0)).where(*where)
    return int((await session.execute(stmt)).scalar_one())


async def table_rows(session: AsyncSession) -> int:
    """All addendums, from the counters."""
    return await sum_totals(session, [])


async def sum_counts(session: AsyncSession, where: Sequence[ColumnElement[bool]]) -> int:
    stmt = select(func.coalesce(func.sum(AddendumCount.n), 0)).where(*where)
    return int((await session.execute(stmt)).scalar_one())
