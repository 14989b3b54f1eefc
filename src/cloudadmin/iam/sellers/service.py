"""Sellers: operators manage any, resellers their own (docs/access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Actor, Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.db.models import Seller as SellerRow
from cloudadmin.errors import Conflict, NotFound
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.owning_reseller import owning_reseller
from cloudadmin.iam.sellers import repository
from cloudadmin.iam.sellers.repository import SellerFilter
from cloudadmin.iam.sellers.schemas import Seller, SellerPage, SellerWrite
from cloudadmin.kit.from_row import from_row
from cloudadmin.kit.ordering import parse_ordering
from cloudadmin.kit.pagination import Paging
from cloudadmin.kit.timeparse import isoformat_z
from cloudadmin.web.idempotency import KeyClaim

EMAIL_TAKEN = "seller with this email already exists."
NOT_FOUND = "Seller not found."
ORDERING = {
    "id": SellerRow.id,
    "email": SellerRow.email,
    "full_name": SellerRow.full_name,
    "date_joined": SellerRow.date_joined,
    "activated": SellerRow.activated,
    "deleted": SellerRow.deleted,
}


def _out(seller: SellerRow, reseller: Client) -> Seller:
    return from_row(
        Seller,
        seller,
        reseller_name=reseller.company_name,
        company=seller.company or reseller.company_name,
        date_joined=isoformat_z(seller.date_joined),
    )


async def create(
    session: AsyncSession, actor: Actor, body: SellerWrite, idempotency: KeyClaim
) -> Seller:
    missing = "Name the reseller account that owns the seller."
    reseller = await owning_reseller(session, actor.caller, body.reseller, missing=missing)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    if await repository.email_taken(session, body.email):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    given = body.model_dump(include={"email", "full_name", "phone"})
    # A new seller is not activated yet; its company is its reseller's.
    seller = SellerRow(
        **given,
        company=reseller.company_name,
        reseller_id=reseller.id,
        activated=False,
        deleted=False,
    )
    session.add(seller)
    await session.flush()
    await user_actions.record_change(
        session, actor, reseller, "create", Resource("seller", seller.id), given
    )
    return _out(seller, reseller)


async def _visible(
    session: AsyncSession, caller: Caller, seller_id: int, *, for_change: bool = False
) -> tuple[SellerRow, Client]:
    """A seller of the caller's resellers and its reseller. For a change the seller is
    locked first, and a deleted one is not found: of two concurrent changes, one that
    comes after a deletion finds the seller gone."""
    require(caller, CallerKind.reseller)
    found = await repository.get_visible(session, caller, seller_id, for_change=for_change)
    if found is None or (for_change and found[0].deleted):
        raise NotFound(NOT_FOUND)
    return found


async def visible_row(
    session: AsyncSession, caller: Caller, seller_id: int, *, change: bool = False
) -> tuple[SellerRow, Client]:
    """The seller's row and its reseller, as the operations find them (``change``: locked,
    and a deleted seller is not found)."""
    return await _visible(session, caller, seller_id, for_change=change)


out = _out


async def get(session: AsyncSession, caller: Caller, seller_id: int) -> Seller:
    return _out(*await _visible(session, caller, seller_id))


async def update(session: AsyncSession, actor: Actor, seller_id: int, body: SellerWrite) -> Seller:
    seller, reseller = await _visible(session, actor.caller, seller_id, for_change=True)
    if await repository.email_taken(session, body.email, except_id=seller.id):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    wanted: dict[str, object] = {"email": body.email, "full_name": body.full_name}
    if "phone" in body.model_fields_set:
        wanted["phone"] = body.phone
    resource = Resource("seller", seller.id)
    await user_actions.apply_and_record(session, actor, reseller, resource, seller, wanted)
    return _out(seller, reseller)


async def list_sellers(
    session: AsyncSession,
    caller: Caller,
    flt: SellerFilter,
    page: Paging,
    ordering: list[str] | None,
    url: URL,
) -> list[Seller] | SellerPage:
    """Without ``limit`` a plain array of every matching seller (the provider's
    SellersArray); with it a page (SellersPaginatedArray)."""
    require(caller, CallerKind.reseller)
    order_by = parse_ordering(ordering, ORDERING, tiebreak=SellerRow.id)
    rows = await repository.page_visible(session, caller, flt, order_by, page)
    results = [_out(seller, reseller) for seller, reseller in rows]
    if page.limit is None:
        return results
    total = await repository.count_visible(session, caller, flt)
    nxt, prev = page.links(url, count=total)
    return SellerPage(count=total, next=nxt, previous=prev, results=results)


async def delete(session: AsyncSession, actor: Actor, seller_id: int) -> None:
    """Marks the seller deleted and unassigns it from its clients (of two concurrent
    deletions, the second finds the seller gone: 404)."""
    seller, reseller = await _visible(session, actor.caller, seller_id, for_change=True)
    seller.deleted = True
    await session.flush()
    await repository.unassign_from_clients(session, seller.id)
    await user_actions.record_change(
        session, actor, reseller, "delete", Resource("seller", seller.id), {"deleted": True}
    )
