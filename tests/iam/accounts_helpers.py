"""Helpers for the account, user and client-user tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, User, UserActionEvent

EMBEDDED_USER_KEYS = {
    "id",
    "email",
    "name",
    "lang",
    "phone",
    "company",
    "reseller",
    "client",
    "deleted",
    "groups",
    "activated",
    "sso_auth",
    "two_fa",
    "auth_types",
}
CLIENT_REQUIRED_KEYS = {
    "id",
    "email",
    "name",
    "status",
    "companyName",
    "deleted",
    "is_test",
    "has_active_admin",
    "currentUser",
    "capabilities",
    "serviceStatuses",
    "paidFeatures",
    "freeFeatures",
    "entryBaseDomain",
    "bill_type",
}
SIX_SERVICES = {"CDN", "CLOUD", "DDOS", "DNS", "STORAGE", "STREAMING"}
STRONG_PASSWORD = "Correct-Horse-Battery-9"


async def fresh(session: AsyncSession, model: Any, ident: int) -> Any:
    """The row as committed now (the test session may hold a stale copy).

    Every helper here ends its transaction: on SQLite an open one holds the write lock
    (BEGIN IMMEDIATE) and the app's next request would wait for it."""
    stmt = select(model).where(model.id == ident).execution_options(populate_existing=True)
    row = (await session.execute(stmt)).scalar_one_or_none()
    await session.commit()
    return row


async def count(session: AsyncSession, model: Any, *where: Any) -> int:
    stmt = select(func.count()).select_from(model).where(*where)
    value = int((await session.execute(stmt)).scalar_one())
    await session.commit()
    return value


async def events(session: AsyncSession) -> list[dict[str, Any]]:
    rows = (
        (
            await session.execute(
                select(UserActionEvent)
                .order_by(UserActionEvent.id)
                .execution_options(populate_existing=True)
            )
        )
        .scalars()
        .all()
    )
    await session.commit()
    return [r.body for r in rows]


async def users_with_email(session: AsyncSession, email: str) -> int:
    return await count(session, User, func.lower(User.email) == email.lower())


async def clients_named(session: AsyncSession, company: str) -> int:
    return await count(session, Client, func.lower(Client.company_name) == company.lower())
