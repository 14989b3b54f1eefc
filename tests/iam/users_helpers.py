"""A landscape for the user and client-user operations: who calls, and whom they reach."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey, Client, User
from tests.factories import (
    Landscape,
    auth,
    groups_by_id,
    landscape,
    make_client,
    make_key,
    make_user,
)
from tests.iam.accounts_helpers import fresh

# The provider's User: every one of its fields is required.
USER_KEYS = {
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
    "user_type",
    "is_active",
    "client_and_roles",
}


@dataclass
class Cast:
    """``ls`` (tests/factories.py) plus users to act on.

    - ``reseller_user``: the user behind ``ls.reseller``; ``operator_user`` likewise.
    - ``boss``: a superuser living in the reseller's client account.
    - ``gone``: a deleted user of the client account.
    - ``foreign``: an account of the other reseller, its administrator ``foreign_admin``
      (key ``foreign_key``).
    """

    ls: Landscape
    reseller_user: User
    operator_user: User
    boss: User
    gone: User
    foreign: Client
    foreign_admin: User
    foreign_key: str


async def user_of(session: AsyncSession, token: str) -> User:
    key = await fresh(session, ApiKey, int(token.split("_")[0]))
    user: User = await fresh(session, User, key.user_id)
    return user


async def cast(session: AsyncSession) -> Cast:
    ls = await landscape(session)
    groups = await groups_by_id(session, 1)
    # Added, then written in one flush (landscape's way).
    with session.no_autoflush:
        user = partial(make_user, session, flush=False, known_groups=groups)
        boss = await user(ls.client_account, superuser=True)
        gone = await user(ls.client_account, deleted=True)
        foreign = await make_client(session, reseller_id=ls.other_reseller_account.id, flush=False)
        foreign_admin = await user(foreign)
        foreign_key = await make_key(session, foreign_admin, flush=False)
    await session.commit()
    return Cast(
        ls=ls,
        reseller_user=await user_of(session, ls.reseller),
        operator_user=await user_of(session, ls.operator),
        boss=boss,
        gone=gone,
        foreign=foreign,
        foreign_admin=foreign_admin,
        foreign_key=foreign_key,
    )


async def authenticates(client: httpx.AsyncClient, token: str) -> bool:
    r = await client.get("/iam/users", headers=auth(token))
    assert r.status_code in (200, 401), r.text
    return r.status_code == 200
