"""Account queries, always from what the caller may see; identity uniqueness checks."""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import visible_accounts
from cloudadmin.db import locking
from cloudadmin.db.models import Branding, Client, Seller, User
from cloudadmin.kit.caseless import fold

# Key of the PostgreSQL advisory lock that serialises writes of unique identities
# (user e-mail addresses, company names). SQLite transactions already run one writer
# at a time (BEGIN IMMEDIATE).
IDENTITY_LOCK_KEY = 0x0C1A_0003


async def lock_identities(session: AsyncSession) -> None:
    """Held until the transaction ends: a concurrent creation of the same e-mail or
    company waits and then sees the committed row."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(IDENTITY_LOCK_KEY)))


async def get_visible(
    session: AsyncSession, caller: Caller, client_id: int, *, for_change: bool = False
) -> Client | None:
    """``for_change``: locked until the transaction ends; an account that a concurrent
    request marked deleted meanwhile is then not found."""
    stmt = select(Client).where(
        Client.id == client_id,
        Client.deleted.is_(False),
        visible_accounts(caller, Client.id),
    )
    if for_change:
        stmt = locking.for_change(stmt, Client)
    return (await session.execute(stmt)).scalar_one_or_none()


async def account_users(session: AsyncSession, client_id: int) -> list[User]:
    stmt = (
        select(User).where(User.client_id == client_id, User.deleted.is_(False)).order_by(User.id)
    )
    return list((await session.execute(stmt)).scalars().all())


async def rename_users_company(session: AsyncSession, client_id: int, company: str) -> None:
    """A user's ``company`` is its account's company name (docs/iam.md): a stored copy,
    so a rename carries it to every user of the account, in the rename's transaction."""
    await session.execute(update(User).where(User.client_id == client_id).values(company=company))


async def get_reseller(session: AsyncSession, reseller_id: int) -> Client | None:
    stmt = select(Client).where(
        Client.id == reseller_id, Client.client_type == "reseller", Client.deleted.is_(False)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_seller(session: AsyncSession, seller_id: int) -> Seller | None:
    stmt = select(Seller).where(Seller.id == seller_id, Seller.deleted.is_(False))
    return (await session.execute(stmt)).scalar_one_or_none()


async def company_taken(
    session: AsyncSession, company: str, *, except_id: int | None = None
) -> bool:
    """Whether a live account other than ``except_id`` has this name, ignoring letter
    case the same way on both databases (the stored folded copy)."""
    stmt = select(Client.id).where(
        Client.company_name_folded == fold(company), Client.deleted.is_(False)
    )
    if except_id is not None:
        stmt = stmt.where(Client.id != except_id)
    return (await session.execute(stmt.limit(1))).first() is not None


async def email_taken(session: AsyncSession, email: str) -> bool:
    """Among all users, deleted ones included (one e-mail names one login)."""
    stmt = select(User.id).where(func.lower(User.email) == email.lower())
    return (await session.execute(stmt.limit(1))).first() is not None


async def entry_base_domain(session: AsyncSession, reseller_id: int) -> str | None:
    """The control panel domain a reseller's branding gives its new clients."""
    branding = await session.get(Branding, reseller_id)
    if branding is None or branding.deleted:
        return None
    value = (branding.public_settings or {}).get("entryBaseDomain")
    return value if isinstance(value, str) and value else None
