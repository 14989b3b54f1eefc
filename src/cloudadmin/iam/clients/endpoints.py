"""PATCH /iam/clients/{clientId} (operation 1)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

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
