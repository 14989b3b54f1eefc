"""Sellers: operators manage any, resellers their own (access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.db.models import Seller as SellerRow
from cloudadmin.errors import Conflict, NotFound, ValidationError
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


async def _owning_reseller(session: AsyncSession, caller: Caller, body: SellerWrite) -> Client:
    if caller.is_operator and body.reseller is not None:
        reseller_id = body.reseller
    elif caller.account_type == "reseller":
        reseller_id = caller.account_id
    else:
        raise ValidationError.field("reseller", "Name the reseller account that owns the seller.")
    reseller = await repository.get_reseller(session, reseller_id)
    if reseller is None:
        raise ValidationError.field("reseller", "Not a reseller account.")
    return reseller


async def create(session: AsyncSession, caller: Caller, body: SellerWrite) -> Seller:
    require(caller, CallerKind.reseller)
    reseller = await _owning_reseller(session, caller, body)
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
    return _out(seller, reseller)


async def _visible(
    session: AsyncSession, caller: Caller, seller_id: int
) -> tuple[SellerRow, Client]:
    require(caller, CallerKind.reseller)
    found = await repository.get_visible(session, caller, seller_id)
    if found is None:
        raise NotFound("Seller not found.")
    return found


async def get(session: AsyncSession, caller: Caller, seller_id: int) -> Seller:
    return _out(*await _visible(session, caller, seller_id))


async def update(
    session: AsyncSession, caller: Caller, seller_id: int, body: SellerWrite
) -> Seller:
    seller, reseller = await _visible(session, caller, seller_id)
    if await repository.email_taken(session, body.email, except_id=seller.id):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    seller.email = body.email
    seller.full_name = body.full_name
    if "phone" in body.model_fields_set:
        seller.phone = body.phone
    await session.flush()
    return _out(seller, reseller)
