"""Sellers: operators manage any, resellers their own (access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.db.models import Seller as SellerRow
from cloudadmin.errors import Conflict, NotFound
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Actor, Resource
from cloudadmin.iam.owning_reseller import owning_reseller
from cloudadmin.iam.sellers import repository
from cloudadmin.iam.sellers.schemas import Seller, SellerWrite
from cloudadmin.kit.timeparse import isoformat_z

EMAIL_TAKEN = "seller with this email already exists."


def _out(seller: SellerRow, reseller: Client) -> Seller:
    return Seller(
        id=seller.id,
        email=seller.email,
        full_name=seller.full_name,
        reseller_name=reseller.company_name,
        company=seller.company or reseller.company_name,
        date_joined=isoformat_z(seller.date_joined),
        activated=seller.activated,
        deleted=seller.deleted,
        phone=seller.phone,
    )


async def _record(
    session: AsyncSession, actor: Actor, action: str, seller: SellerRow, reseller: Client,
    changes: dict[str, object],
) -> None:
    await user_actions.record(
        session, actor, action_type=action, api_group="seller",
        resources=[Resource("seller", seller.id)], client_id=reseller.id,
        reseller_id=reseller.reseller_id, action_data=changes,
    )


async def create(session: AsyncSession, actor: Actor, body: SellerWrite) -> Seller:
    caller = actor.caller
    require(caller, CallerKind.reseller)
    reseller = await owning_reseller(
        session, caller, body.reseller, missing="Name the reseller account that owns the seller."
    )
    if await repository.email_taken(session, body.email):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    seller = SellerRow(
        email=body.email,
        full_name=body.full_name,
        phone=body.phone,
        company=reseller.company_name,
        reseller_id=reseller.id,
        activated=False,
        deleted=False,
    )
    session.add(seller)
    await session.flush()
    await _record(session, actor, "create", seller, reseller,
                  body.model_dump(include={"email", "full_name", "phone"}))
    return _out(seller, reseller)


async def _visible(
    session: AsyncSession, caller: Caller, seller_id: int, *, for_change: bool = False
) -> tuple[SellerRow, Client]:
    require(caller, CallerKind.reseller)
    found = await repository.get_visible(session, caller, seller_id, for_change=for_change)
    if found is None:
        raise NotFound("Seller not found.")
    return found


async def get(session: AsyncSession, caller: Caller, seller_id: int) -> Seller:
    return _out(*await _visible(session, caller, seller_id))


async def update(
    session: AsyncSession, actor: Actor, seller_id: int, body: SellerWrite
) -> Seller:
    seller, reseller = await _visible(session, actor.caller, seller_id, for_change=True)
    if await repository.email_taken(session, body.email, except_id=seller.id):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    wanted: dict[str, object] = {"email": body.email, "full_name": body.full_name}
    if "phone" in body.model_fields_set:
        wanted["phone"] = body.phone
    changes = {k: v for k, v in wanted.items() if getattr(seller, k) != v}
    for name, value in changes.items():
        setattr(seller, name, value)
    await session.flush()
    if changes:
        await _record(session, actor, "update", seller, reseller, changes)
    return _out(seller, reseller)
