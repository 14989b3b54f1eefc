"""User rows: groups and creation."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, Group, User


async def get_group(session: AsyncSession, group_id: int) -> Group | None:
    return await session.get(Group, group_id)


async def add_user(
    session: AsyncSession,
    *,
    account: Client,
    email: str,
    password_hash: str,
    group: Group,
    name: str | None = None,
    phone: str | None = None,
    lang: str = "en",
    user_type: str = "common",
) -> User:
    """An activated user who may authenticate at once (with a key created for it)."""
    user = User(
        email=email,
        name=name,
        phone=phone,
        lang=lang,
        company=account.company_name,
        client_id=account.id,
        deleted=False,
        activated=True,
        sso_auth=False,
        two_fa=False,
        auth_types=["password"],
        user_type=user_type,
        is_active=True,
        superuser=False,
        password_hash=password_hash,
        groups=[group],
    )
    session.add(user)
    await session.flush()
    return user
