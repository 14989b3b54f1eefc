"""POST /iam/users ; the account's users: list, read, PATCH, DELETE."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from cloudadmin.auth.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.iam.users import manage, service
from cloudadmin.iam.users.schemas import User, UserCreate, UserCreated, UserPage, UserPatch
from cloudadmin.kit.ints import Id32
from cloudadmin.kit.params import WholeListPage
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute, answers

router = APIRouter(route_class=ApiRoute, tags=["Users"])

UserId = Annotated[Id32, Path(description="User's ID.")]


@router.post(
    "/iam/users",
    status_code=201,
    summary="Create a user with a new client account",
)
async def create_user(
    body: UserCreate, session: Session, actor: CurrentActor, idempotency: Idempotent
) -> UserCreated:
    """Creates, in one transaction, a common account under the calling reseller and its
    first user (group Administrators), both activated."""
    return await service.create(session, actor, body, idempotency)


@router.get("/iam/users", summary="Get users")
async def list_users(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    page: WholeListPage,
) -> UserPage:
    """The users of the caller's account that are not deleted, by id. Without `limit`
    every user is returned."""
    return await manage.list_users(session, caller, page, request.url)


@router.get("/iam/users/{userId}", summary="Get user's details")
async def get_user(userId: UserId, session: Session, caller: CurrentCaller) -> User:
    """A user of an account the caller sees (a reseller: its own and its clients';
    everyone else: its own)."""
    return await manage.get(session, caller, userId)


@router.patch("/iam/users/{userId}", summary="Update user's details")
async def update_user(
    userId: UserId, body: UserPatch, session: Session, actor: CurrentActor
) -> User:
    """Partial update of `email`, `name`, `lang`, `phone` and `auth_types`; read-only
    fields sent along are ignored. Anyone may update their own user; client administrators
    and resellers the users they see; an operator's user only an operator."""
    return await manage.update(session, actor, userId, body)


@router.delete(
    "/iam/users/{userId}",
    summary="Delete user",
    **answers(200, "User has been successfully deleted."),
)
async def delete_user(userId: UserId, session: Session, actor: CurrentActor) -> None:
    """Resellers and operators: marks the user deleted; its API keys stop authenticating
    at once. A caller cannot delete its own user."""
    await manage.delete(session, actor, userId)
