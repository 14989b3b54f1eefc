"""POST /iam/users (operation 2)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.auth.deps import CurrentActor, Session
from cloudadmin.iam.users import service
from cloudadmin.iam.users.schemas import UserCreate, UserCreated
from cloudadmin.web.idempotency import IDEMPOTENT
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Users"])


@router.post(
    "/iam/users", response_model=UserCreated, status_code=201, name="create_user",
    dependencies=[IDEMPOTENT],
    summary="Create a user with a new client account",
    description="Creates, in one transaction, a common account under the calling reseller "
    "and its first user (group Administrators), both activated.",
)
async def create_user(body: UserCreate, session: Session, actor: CurrentActor) -> UserCreated:
    return await service.create(session, actor, body)
