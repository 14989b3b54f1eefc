"""Webhook subscription queries, always from what the caller may see."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import WebhookSubscription
from cloudadmin.kit.pagination import Paging


async def of_account(session: AsyncSession, account_id: int) -> WebhookSubscription | None:
    stmt = select(WebhookSubscription).where(WebhookSubscription.client_id == account_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_visible(
    session: AsyncSession, caller: Caller, page: Paging
) -> tuple[int, Sequence[WebhookSubscription]]:
    stmt = select(WebhookSubscription).where(caller_scope(caller, WebhookSubscription.client_id))
    count = await count_rows(session, stmt.subquery())
    rows = await session.execute(sliced(stmt.order_by(WebhookSubscription.id), page))
    return count, list(rows.scalars())
