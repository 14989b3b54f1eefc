"""GET /billing/org/v1/addendums (operation 13)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from pydantic_core import to_json

from cloudadmin.auth.deps import Connection, CurrentCaller
from cloudadmin.billing.addendums import service
from cloudadmin.billing.addendums.schemas import AddendumPage, AddendumQuery
from cloudadmin.web.query_model import query_model, query_model_parameters
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Addendums"])


@router.get(
    "/billing/org/v1/addendums",
    response_model=AddendumPage,
    name="list_addendums",
    summary="List addendums",
    openapi_extra={"parameters": query_model_parameters(AddendumQuery)},
)
async def list_addendums(
    request: Request,
    conn: Connection,
    caller: CurrentCaller,
    query: Annotated[AddendumQuery, Depends(query_model(AddendumQuery))],
) -> Response:
    # Serialised once from plain dicts: response_model documents the shape, and
    # re-validating up to 100 nested models per page would cost more than the SQL
    # (docs/billing.md, "Performance"); tests check the shape against the schema.
    page = await service.list_addendums(conn, caller, query, url=request.url)
    return Response(to_json(page), media_type="application/json")
