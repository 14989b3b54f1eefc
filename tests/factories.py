"""Small helpers that put records straight into the database for a test."""

from __future__ import annotations

import functools
import itertools
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey, Client, Group, Seller, User
from cloudadmin.kit.crypto import hash_api_secret

_ids = itertools.count(1000)


def next_id() -> int:
    return next(_ids)


async def make_client(
    session: AsyncSession,
    *,
    client_type: str = "common",
    reseller_id: int | None = None,
    company_name: str | None = None,
    deleted: bool = False,
    flush: bool = True,
    **fields: object,
) -> Client:
    cid = next_id()
    client = Client(
        id=cid,
        email=f"account{cid}@example.com",
        company_name=company_name or f"Company {cid}",
        client_type=client_type,
        reseller_id=reseller_id,
        deleted=deleted,
        **fields,
    )
    session.add(client)
    if flush:
        await session.flush()
    return client


async def make_reseller(session: AsyncSession, **fields: object) -> Client:
    return await make_client(session, client_type="reseller", **fields)


async def make_user(
    session: AsyncSession,
    client: Client,
    *,
    groups: tuple[int, ...] = (1,),
    superuser: bool = False,
    deleted: bool = False,
    email: str | None = None,
    flush: bool = True,
    known_groups: dict[int, Group] | None = None,
    **fields: object,
) -> User:
    """``known_groups`` (by id, loaded in ``session``) spares the query for them."""
    uid = next_id()
    if known_groups is not None and set(groups) <= set(known_groups):
        found = [known_groups[g] for g in sorted(set(groups))]
    else:
        found = list(
            (await session.execute(select(Group).where(Group.id.in_(groups)))).scalars().all()
        )
    user = User(
        id=uid,
        email=email or f"user{uid}@example.com",
        client_id=client.id,
        superuser=superuser,
        deleted=deleted,
        groups=found,
        **fields,
    )
    session.add(user)
    if flush:
        await session.flush()
    return user


async def make_key(
    session: AsyncSession,
    user: User,
    *,
    secret: str = "s3cret-value",
    expires_at: datetime | None = None,
    revoked: bool = False,
    flush: bool = True,
) -> str:
    """Stores a key and returns the token a caller sends."""
    kid = next_id()
    session.add(
        ApiKey(
            id=kid,
            user_id=user.id,
            secret_hash=hash_api_secret(kid, secret),
            expires_at=expires_at,
            revoked=revoked,
        )
    )
    if flush:
        await session.flush()
    return f"{kid}_{secret}"


async def make_seller(
    session: AsyncSession, reseller: Client, *, flush: bool = True, **fields: object
) -> Seller:
    sid = next_id()
    seller = Seller(
        id=sid,
        email=fields.pop("email", f"seller{sid}@example.com"),
        full_name=fields.pop("full_name", f"Seller {sid}"),
        reseller_id=reseller.id,
        company=reseller.company_name,
        **fields,
    )
    session.add(seller)
    if flush:
        await session.flush()
    return seller


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"apikey {token}"}


class Landscape:
    """Operator, reseller with a client, a second reseller; one key per kind of caller."""

    operator: str
    reseller: str
    other_reseller: str
    client_admin: str
    client_member: str
    reseller_account: Client
    other_reseller_account: Client
    client_account: Client
    member_user: User
    admin_user: User


async def groups_by_id(session: AsyncSession, *ids: int) -> dict[int, Group]:
    """The seeded groups, for make_user's ``known_groups``."""
    found = await session.execute(select(Group).where(Group.id.in_(ids)))
    return {g.id: g for g in found.scalars()}


async def landscape(session: AsyncSession) -> Landscape:
    # Every record added, then one flush: a round trip per table rather than per record
    # (the ids are given, nothing waits for the database to assign one).
    groups = await groups_by_id(session, 1, 2)
    ls = Landscape()
    with session.no_autoflush:
        client = functools.partial(make_client, session, flush=False)
        user = functools.partial(make_user, session, flush=False, known_groups=groups)
        key = functools.partial(make_key, session, flush=False)
        ls.reseller_account = await client(client_type="reseller", company_name="Acme Hosting")
        ls.other_reseller_account = await client(
            client_type="reseller", company_name="Other Hosting"
        )
        ls.client_account = await client(reseller_id=ls.reseller_account.id)
        operator_home = await client(client_type="reseller")
        ls.operator = await key(await user(operator_home, superuser=True))
        ls.reseller = await key(await user(ls.reseller_account))
        ls.other_reseller = await key(await user(ls.other_reseller_account))
        ls.admin_user = await user(ls.client_account, groups=(1,))
        ls.client_admin = await key(ls.admin_user)
        ls.member_user = await user(ls.client_account, groups=(2,))
        ls.client_member = await key(ls.member_user)
    await session.commit()
    return ls
