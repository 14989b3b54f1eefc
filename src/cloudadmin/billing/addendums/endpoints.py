"""GET /billing/org/v1/addendums  and one addendum by id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic_core import to_json

from cloudadmin.billing.addendums import service
from cloudadmin.billing.addendums.schemas import Addendum, AddendumPage, AddendumQuery
from cloudadmin.kit.ints import INT64_MAX
from cloudadmin.web.deps import Connection, CurrentCaller
from cloudadmin.web.query_model import query_model
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Addendums"])

# The list's filters and paging, validated from the query string in one call.
Filters = Annotated[AddendumQuery, Depends(query_model(AddendumQuery))]


@router.get(
    "/billing/org/v1/addendums",
    response_model=AddendumPage,
    summary="List addendums",
)
async def list_addendums(
    request: Request,
    conn: Connection,
    caller: CurrentCaller,
    query: Filters,
) -> Response:
    # Written once as JSON (by the database or from plain dicts): response_model
    # documents the shape, and re-validating up to 100 nested models per page would
    # cost more than the SQL (docs/billing.md, "Performance"); tests check the shape
    # against the schema.
    page = await service.list_addendums(conn, caller, query, url=request.url)
    return Response(page, media_type="application/json")


@router.get(
    "/billing/org/v1/addendums/{id}",
    response_model=Addendum,
    summary="Get a single Addendum",
    description="Retrieve a single addendum by ID: one the caller would see in the list "
    "(docs/billing.md); any other id is 404.",
)
async def get_addendum(
    id: Annotated[int, Path(ge=1, le=INT64_MAX)],  # noqa: A002
    conn: Connection,
    caller: CurrentCaller,
) -> Response:
    # Written as the list writes its items (status_at_active_at absent, not null).
    item = await service.get_addendum(conn, caller, id)
    return Response(to_json(item), media_type="application/json")
