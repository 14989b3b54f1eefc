"""POST /iam/clients/{clientId}/client-users/create (operation 3)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.auth.deps import CurrentActor, Session
from cloudadmin.iam.client_users import service
from cloudadmin.iam.client_users.schemas import ClientUser, ClientUserCreate
from cloudadmin.iam.clients.endpoints import ClientId
from cloudadmin.web.idempotency import IDEMPOTENT
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Clients"])


@router.post(
    "/iam/clients/{clientId}/client-users/create", response_model=ClientUser,
    name="create_client_user", summary="Create a user in a client account",
    dependencies=[IDEMPOTENT],
    description="The new user belongs to the account with the given role and may "
    "authenticate at once; the password is never echoed.",
)
async def create_client_user(
    clientId: ClientId, body: ClientUserCreate, session: Session, actor: CurrentActor  # noqa: N803
) -> ClientUser:
    return await service.create(session, actor, clientId, body)
