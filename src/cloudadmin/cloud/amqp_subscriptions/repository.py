"""AMQP subscription queries, always from what the caller may see."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db import locking
from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import AmqpSubscription, Client
from cloudadmin.kit.pagination import Paging


def _visible(caller: Caller) -> Select[AmqpSubscription, Client]:
    stmt = select(AmqpSubscription, Client).join(Client, Client.id == AmqpSubscription.client_id)
    return stmt.where(caller_scope(caller, AmqpSubscription.client_id))


async def get_visible(
    session: AsyncSession, caller: Caller, subscription_id: int, *, for_change: bool = False
) -> tuple[AmqpSubscription, Client] | None:
    """``for_change``: the subscription is locked until the transaction ends."""
    stmt = _visible(caller).where(AmqpSubscription.id == subscription_id)
    if for_change:
        stmt = locking.for_change(stmt, AmqpSubscription)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1])


async def of_account(
    session: AsyncSession, account_id: int, *, for_removal: bool = False
) -> AmqpSubscription | None:
    """``for_removal``: locked until the transaction ends, to be deleted: of two
    concurrent unsubscribes exactly one finds it."""
    stmt = select(AmqpSubscription).where(AmqpSubscription.client_id == account_id)
    if for_removal:
        stmt = locking.for_change(stmt, removal=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_visible(
    session: AsyncSession, caller: Caller, page: Paging, *, client_id: int | None
) -> tuple[int, Sequence[AmqpSubscription]]:
    stmt = _visible(caller)
    if client_id is not None:
        stmt = stmt.where(AmqpSubscription.client_id == client_id)
    count = await count_rows(session, stmt.subquery())
    rows = await session.execute(sliced(stmt.order_by(AmqpSubscription.id), page))
    return count, [r[0] for r in rows.all()]
