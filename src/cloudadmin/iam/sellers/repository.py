"""Seller queries, always from what the caller may see."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.db import locking
from cloudadmin.db.models import Client, Seller


async def get_visible(
    session: AsyncSession, caller: Caller, seller_id: int, *, for_change: bool = False
) -> tuple[Seller, Client] | None:
    """``for_change``: the seller is locked until the transaction ends, so concurrent
    updates take turns and each records the changes it really made."""
    stmt = (
        select(Seller, Client)
        .join(Client, Client.id == Seller.reseller_id)
        .where(Seller.id == seller_id)
    )
    if not caller.is_operator:
        stmt = stmt.where(Seller.reseller_id == caller.account_id)
    if for_change:
        stmt = locking.for_change(stmt, Seller)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1])


async def email_taken(session: AsyncSession, email: str, *, except_id: int | None = None) -> bool:
    stmt = select(Seller.id).where(func.lower(Seller.email) == email.lower())
    if except_id is not None:
        stmt = stmt.where(Seller.id != except_id)
    return (await session.execute(stmt.limit(1))).first() is not None
