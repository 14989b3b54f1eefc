"""User rows: groups, creation, and the users a caller may see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import visible_accounts
from cloudadmin.db import locking
from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import Client, Group, User
from cloudadmin.kit.crypto import hash_password
from cloudadmin.kit.pagination import Paging


async def get_group(session: AsyncSession, group_id: int) -> Group | None:
    return await session.get(Group, group_id)


async def add_user(
    session: AsyncSession,
    account: Client,
    group: Group,
    *,
    email: str,
    password: str | None,
    name: str | None = None,
    phone: str | None = None,
    lang: str = "en",
) -> User:
    """An activated user who may authenticate at once (with a key created for it). Only
    a hash of ``password`` is stored; a reseller account's users are of type reseller.
    Without a password (an invitation), the user is not activated until it sets one."""
    user = User(
        email=email,
        name=name,
        phone=phone,
        lang=lang,
        company=account.company_name,
        client_id=account.id,
        deleted=False,
        activated=password is not None,
        sso_auth=False,
        two_fa=False,
        auth_types=["password"],
        user_type="reseller" if account.is_reseller else "common",
        is_active=True,
        superuser=False,
        password_hash=hash_password(password) if password is not None else None,
        groups=[group],
    )
    session.add(user)
    await session.flush()
    return user


async def by_email(session: AsyncSession, email: str) -> User | None:
    """The user whose login is ``email`` (letter case aside), deleted or not."""
    stmt = select(User).where(func.lower(User.email) == email.lower())
    return (await session.execute(stmt.limit(1))).scalar_one_or_none()


async def for_new_password(session: AsyncSession, user_id: int) -> User | None:
    """A live user of a live account, locked until the transaction ends: of two requests
    with one set-password token, the second finds the password the first set."""
    stmt = _live_users().where(User.id == user_id)
    row = (await session.execute(locking.for_change(stmt, User))).first()
    return None if row is None else row[0]


def _live_users() -> Select[User, Client]:
    """Users not deleted, of accounts not deleted, with their account."""
    return (
        select(User, Client)
        .join(Client, Client.id == User.client_id)
        .where(User.deleted.is_(False), Client.deleted.is_(False))
    )


async def count_account_users(session: AsyncSession, account_id: int) -> int:
    return await count_rows(session, User, User.client_id == account_id, User.deleted.is_(False))


async def account_users_page(session: AsyncSession, account_id: int, page: Paging) -> list[User]:
    stmt = (
        select(User).where(User.client_id == account_id, User.deleted.is_(False)).order_by(User.id)
    )
    return list((await session.execute(sliced(stmt, page))).scalars())


async def get_visible(
    session: AsyncSession,
    caller: Caller,
    user_id: int,
    *,
    account_id: int | None = None,
    for_change: bool = False,
) -> tuple[User, Client] | None:
    """A live user of an account the caller sees (``account_id``: of that account only).

    ``for_change``: the user is locked until the transaction ends, so a change that comes
    second waits and then finds the user as the first left it (deleted: not found)."""
    stmt = _live_users().where(User.id == user_id, visible_accounts(caller, User.client_id))
    if account_id is not None:
        stmt = stmt.where(User.client_id == account_id)
    if for_change:
        stmt = locking.for_change(stmt, User)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1])


@dataclass(frozen=True, slots=True)
class UserSearch:
    """The Admin Portal's search of users (docs/portal.md, "Users"); None: not filtered.
    ``email`` and ``name``: a part, any letter case; ``account``: an account's id, or a
    part of its company name."""

    email: str | None = None
    name: str | None = None
    account: str | None = None

    def conditions(self) -> list[Any]:
        where: list[Any] = []
        if self.email:
            where.append(User.email.icontains(self.email, autoescape=True))
        if self.name:
            where.append(User.name.icontains(self.name, autoescape=True))
        if self.account:
            named = Client.company_name.icontains(self.account, autoescape=True)
            digits = self.account.strip()
            if digits.isdigit() and len(digits) <= 10:
                where.append(or_(Client.id == int(digits), named))
            else:
                where.append(named)
        return where


def _searched(caller: Caller, search: UserSearch) -> Select[User, Client]:
    return _live_users().where(visible_accounts(caller, User.client_id), *search.conditions())


async def count_search(session: AsyncSession, caller: Caller, search: UserSearch) -> int:
    return await count_rows(session, _searched(caller, search).subquery())


async def search_page(
    session: AsyncSession, caller: Caller, search: UserSearch, page: Paging
) -> list[tuple[User, Client]]:
    """Live users of accounts the caller sees that ``search`` matches, by e-mail then id."""
    stmt = sliced(_searched(caller, search).order_by(func.lower(User.email), User.id), page)
    return [(row[0], row[1]) for row in (await session.execute(stmt)).all()]
