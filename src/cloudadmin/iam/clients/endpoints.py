"""PATCH /iam/clients/{clientId} (operation 1)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from cloudadmin.auth.deps import CurrentActor, Session
from cloudadmin.iam.clients import service
from cloudadmin.iam.clients.schemas import Client, ClientPatch
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Clients"])

ClientId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.patch(
    "/iam/clients/{clientId}", response_model=Client, name="update_client",
    summary="Update a client account",
    description="Partial update: absent fields are left untouched. `reseller`, `seller` and "
    "`is_test` may be changed only by an operator, or by a reseller for its clients. "
    "`status` follows the per-service statuses and cannot be set.",
)
async def update_client(
    clientId: ClientId, body: ClientPatch, session: Session, actor: CurrentActor  # noqa: N803
) -> Client:
    return await service.update(session, actor, clientId, body)


@router.delete(
    "/iam/clients/{clientId}", status_code=204, response_class=Response,
    name="request_client_deletion", summary="Request deletion of a client account",
    description="Marks the account deleted: its users and API keys stop working at once, "
    "and every enabled `deletion_request` address of its reseller is e-mailed. Client "
    "administrators for their own account, resellers for their clients, operators.",
)
async def request_client_deletion(
    clientId: ClientId, session: Session, actor: CurrentActor  # noqa: N803
) -> Response:
    await service.request_deletion(session, actor, clientId)
    return Response(status_code=204)
