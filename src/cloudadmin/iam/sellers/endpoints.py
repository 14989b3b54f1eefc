"""Sellers: operations 4 (create), 5 (read), 6 (update); the list and the deletion."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from cloudadmin.iam.sellers import service
from cloudadmin.iam.sellers.repository import SellerFilter
from cloudadmin.iam.sellers.schemas import Seller, SellerPage, SellerWrite
from cloudadmin.kit.ints import INT32_MAX, Id32Filter
from cloudadmin.kit.params import WholeListPage, ordering_query
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Sellers"])

SellerId = Annotated[int, Path(ge=1, le=INT32_MAX)]


@router.post("/iam/admin/sellers", summary="Create a seller")
async def create_seller(
    body: SellerWrite, session: Session, actor: CurrentActor, idempotency: Idempotent
) -> Seller:
    return await service.create(session, actor, body, idempotency)


@router.get("/iam/admin/sellers/{sellerId}", summary="Read a seller")
async def get_seller(sellerId: SellerId, session: Session, caller: CurrentCaller) -> Seller:
    return await service.get(session, caller, sellerId)


@router.patch("/iam/admin/sellers/{sellerId}", summary="Update a seller")
async def update_seller(
    sellerId: SellerId, body: SellerWrite, session: Session, actor: CurrentActor
) -> Seller:
    return await service.update(session, actor, sellerId, body)


def _id_list(value: str | None) -> tuple[int, ...] | None:
    """``1,2,3``; an id past the column's range matches nothing."""
    if value is None:
        return None
    return tuple(i for i in (int(part) for part in value.split(",")) if i <= INT32_MAX)


def _deleted(value: str | None) -> bool | None:
    """``true`` or ``false``; any other value (or none) lists both, as documented."""
    return {"true": True, "false": False}.get((value or "").lower())


SellerOrdering = Annotated[
    list[str] | None,
    ordering_query(
        "id, email, full_name, date_joined, activated, deleted", "activated,-date_joined"
    ),
]


@router.get("/iam/admin/sellers", summary="Get a list of sellers")
async def list_sellers(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    page: WholeListPage,
    ordering: SellerOrdering = None,
    seller_id: Annotated[Id32Filter | None, Query(alias="id", description="Filter by id.")] = None,
    id_in: Annotated[
        str | None,
        Query(
            alias="id__in",
            max_length=1000,
            pattern=r"^[0-9]{1,10}(,[0-9]{1,10})*$",
            description="Filter by id list: comma separated ids.",
            examples=["1,2,3"],
        ),
    ] = None,
    id_contains: Annotated[
        str | None,
        Query(
            alias="id__contains",
            pattern=r"^[0-9]{1,10}$",
            description="Filter by part of the id (its decimal digits).",
        ),
    ] = None,
    email: Annotated[
        str | None,
        Query(max_length=254, description="Filter by e-mail address (whole, any letter case)."),
    ] = None,
    full_name: Annotated[
        str | None,
        Query(max_length=255, description="Filter by part of the full name (any letter case)."),
    ] = None,
    activated: Annotated[bool | None, Query(description="Filter by activation.")] = None,
    deleted: Annotated[
        str | None,
        Query(
            max_length=10,
            description="`true`: only deleted; `false`: only not deleted; any "
            "other value, or none: both.",
        ),
    ] = None,
    reseller_name: Annotated[
        str | None,
        Query(
            max_length=255,
            description="Filter by part of the reseller's company name (any letter case).",
        ),
    ] = None,
) -> list[Seller] | SellerPage:
    """Operators: every seller; resellers: their own. Without `limit` a plain array of every
    matching seller; with it a page `{count, next, previous, results}`. Filters combine with
    AND."""
    flt = SellerFilter(
        id=seller_id,
        id_in=_id_list(id_in),
        id_contains=id_contains,
        email=email,
        full_name=full_name,
        activated=activated,
        deleted=_deleted(deleted),
        reseller_name=reseller_name,
    )
    return await service.list_sellers(session, caller, flt, page, ordering, request.url)


@router.delete("/iam/admin/sellers/{sellerId}", summary="Delete a seller")
async def delete_seller(sellerId: SellerId, session: Session, actor: CurrentActor) -> None:
    """Marks the seller deleted (it is still read, with `deleted` true) and unassigns it
    from its clients, which stay without a seller."""
    await service.delete(session, actor, sellerId)
