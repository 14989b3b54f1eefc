"""Seller queries, always from what the caller may see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, String, cast, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db import locking
from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import Branding, Client, Seller
from cloudadmin.kit.pagination import Paging


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
    stmt = stmt.where(caller_scope(caller, Seller.reseller_id))
    if for_change:
        stmt = locking.for_change(stmt, Seller)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1])


async def email_taken(session: AsyncSession, email: str, *, except_id: int | None = None) -> bool:
    stmt = select(Seller.id).where(func.lower(Seller.email) == email.lower())
    if except_id is not None:
        stmt = stmt.where(Seller.id != except_id)
    return (await session.execute(stmt.limit(1))).first() is not None


@dataclass(frozen=True, slots=True)
class SellerFilter:
    """The list's filters; None means "not filtered"."""

    id: int | None = None
    id_in: tuple[int, ...] | None = None
    id_contains: str | None = None
    email: str | None = None
    full_name: str | None = None
    activated: bool | None = None
    deleted: bool | None = None
    reseller_name: str | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        where: list[ColumnElement[bool]] = []
        if self.id is not None:
            where.append(Seller.id == self.id)
        if self.id_in is not None:
            where.append(Seller.id.in_(self.id_in))
        if self.id_contains is not None:
            where.append(cast(Seller.id, String).contains(self.id_contains, autoescape=True))
        if self.email is not None:
            where.append(func.lower(Seller.email) == self.email.lower())
        if self.full_name is not None:
            where.append(Seller.full_name.icontains(self.full_name, autoescape=True))
        if self.activated is not None:
            where.append(Seller.activated.is_(self.activated))
        if self.deleted is not None:
            where.append(Seller.deleted.is_(self.deleted))
        if self.reseller_name is not None:
            where.append(Client.company_name.icontains(self.reseller_name, autoescape=True))
        return where


def _visible_sellers(caller: Caller, flt: SellerFilter) -> Select[Seller, Client]:
    stmt = (
        select(Seller, Client)
        .join(Client, Client.id == Seller.reseller_id)
        .where(*flt.conditions())
    )
    stmt = stmt.where(caller_scope(caller, Seller.reseller_id))
    return stmt


async def count_visible(session: AsyncSession, caller: Caller, flt: SellerFilter) -> int:
    return await count_rows(session, _visible_sellers(caller, flt).subquery())


async def page_visible(
    session: AsyncSession,
    caller: Caller,
    flt: SellerFilter,
    order_by: list[Any],
    page: Paging,
) -> list[tuple[Seller, Client]]:
    stmt = sliced(_visible_sellers(caller, flt).order_by(*order_by), page)
    return [(row[0], row[1]) for row in (await session.execute(stmt)).all()]


async def unassign_from_clients(session: AsyncSession, seller_id: int) -> None:
    """The seller's clients stay without a seller."""
    await session.execute(
        update(Client).where(Client.seller_id == seller_id).values(seller_id=None)
    )


async def for_new_password(session: AsyncSession, seller_id: int) -> Seller | None:
    """A seller who may set its password through a link (not deleted, not blocked, of a
    reseller account not deleted), locked until the transaction ends: of two requests
    with one link, the second finds the password the first set."""
    stmt = (
        select(Seller)
        .join(Client, Client.id == Seller.reseller_id)
        .where(
            Seller.id == seller_id,
            Seller.deleted.is_(False),
            Seller.blocked.is_(False),
            Client.deleted.is_(False),
        )
    )
    return (await session.execute(locking.for_change(stmt, Seller))).scalar_one_or_none()


async def mail_server_of(session: AsyncSession, reseller_id: int) -> Branding | None:
    """The reseller's branding when it names a mail server (its mails go through it)."""
    branding = await session.get(Branding, reseller_id)
    if branding is None or branding.deleted or not (branding.mail_server or {}).get("host"):
        return None
    return branding
