"""PATCH and DELETE /iam/clients/{clientId} ; reading accounts: GET
/iam/clients, /iam/clients/me and /iam/clients/{clientId}."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import TypeAdapter

from cloudadmin.iam.clients import reads, service
from cloudadmin.iam.clients.query import ClientListQuery, ClientPage
from cloudadmin.iam.clients.schemas import Client, ClientBase, ClientPatch
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.query_model import query_model
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Clients"])
_LIST_ANSWER: TypeAdapter[list[Client] | ClientPage] = TypeAdapter(list[Client] | ClientPage)

ClientId = Annotated[int, Path(ge=1, le=INT32_MAX, description="Account ID.")]
# The list's filters and paging, validated from the query string in one call.
Filters = Annotated[ClientListQuery, Depends(query_model(ClientListQuery))]


@router.get(
    "/iam/clients",
    response_model=list[Client] | ClientPage,
    summary="Get clients",
)
async def list_clients(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    query: Filters,
) -> Response:
    """Operators: every account; resellers: their clients. Client administrators and
    members: 403 (their own account is `GET /iam/clients/me`). Without `limit` every
    matching client as an array; with it a page."""
    # Serialised once: the models are built and checked by reads.list_clients, and
    # FastAPI's second validation of every client and user doubled the time of a long
    # list (docs/iam.md, "GET /iam/clients").
    answer = await reads.list_clients(session, caller, query, url=request.url)
    return Response(_LIST_ANSWER.dump_json(answer), media_type="application/json")


# Declared before /iam/clients/{clientId}, which would otherwise take "me" as an id.
@router.get("/iam/clients/me", response_model=ClientBase, summary="Account Details")
async def get_account_details(session: Session, caller: CurrentCaller) -> Client:
    """The caller's own account, its users and other details. Every caller."""
    return await reads.me(session, caller)


@router.get("/iam/clients/{clientId}", summary="Get client's details")
async def get_client(clientId: ClientId, session: Session, caller: CurrentCaller) -> Client:
    """Operators: any account; resellers: their clients and their own account; client
    administrators and members: their own account. Any other, and a deleted account, is 404."""
    return await reads.get(session, caller, clientId)


@router.patch("/iam/clients/{clientId}", summary="Update a client account")
async def update_client(
    clientId: ClientId, body: ClientPatch, session: Session, actor: CurrentActor
) -> Client:
    """Partial update: absent fields are left untouched. `reseller`, `seller` and `is_test`
    may be changed only by an operator, or by a reseller for its clients. `status` follows
    the per-service statuses and cannot be set."""
    return await service.update(session, actor, clientId, body)


@router.delete("/iam/clients/{clientId}", summary="Request deletion of a client account")
async def request_client_deletion(
    clientId: ClientId, session: Session, actor: CurrentActor
) -> None:
    """Marks the account deleted: its users and API keys stop working at once, and every
    enabled `deletion_request` address of its reseller is e-mailed. Client administrators
    for their own account, resellers for their clients, operators."""
    await service.request_deletion(session, actor, clientId)
