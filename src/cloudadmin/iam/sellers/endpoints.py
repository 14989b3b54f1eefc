"""Sellers: operations 4 (create), 5 (read), 6 (update)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from cloudadmin.auth.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.iam.sellers import service
from cloudadmin.iam.sellers.schemas import Seller, SellerWrite
from cloudadmin.web.idempotency import IDEMPOTENT
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Sellers"])

SellerId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/iam/admin/sellers", response_model=Seller, name="create_seller",
             summary="Create a seller", dependencies=[IDEMPOTENT])
async def create_seller(body: SellerWrite, session: Session, actor: CurrentActor) -> Seller:
    return await service.create(session, actor, body)


@router.get("/iam/admin/sellers/{sellerId}", response_model=Seller, name="get_seller",
            summary="Read a seller")
async def get_seller(sellerId: SellerId, session: Session, caller: CurrentCaller) -> Seller:  # noqa: N803
    return await service.get(session, caller, sellerId)


@router.patch("/iam/admin/sellers/{sellerId}", response_model=Seller, name="update_seller",
              summary="Update a seller")
async def update_seller(
    sellerId: SellerId, body: SellerWrite, session: Session, actor: CurrentActor  # noqa: N803
) -> Seller:
    return await service.update(session, actor, sellerId, body)
