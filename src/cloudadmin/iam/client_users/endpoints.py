"""POST /iam/clients/{clientId}/client-users/create ; a user's group in an
account: GET, PUT, DELETE /iam/clients/{clientId}/client-users/{userId}."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from cloudadmin.iam.client_users import manage, service
from cloudadmin.iam.client_users.schemas import (
    ClientUser,
    ClientUserCreate,
    UserGroup,
    UserGroupChange,
)
from cloudadmin.iam.clients.endpoints import ClientId
from cloudadmin.kit.ints import Id32
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute, answers

router = APIRouter(route_class=ApiRoute, tags=["Clients"])


@router.post(
    "/iam/clients/{clientId}/client-users/create",
    summary="Create a user in a client account",
)
async def create_client_user(
    clientId: ClientId,
    body: ClientUserCreate,
    session: Session,
    actor: CurrentActor,
    idempotency: Idempotent,
) -> ClientUser:
    """The new user belongs to the account with the given role and may authenticate at once;
    the password is never echoed."""
    return await service.create(session, actor, clientId, body, idempotency)


ITEM = "/iam/clients/{clientId}/client-users/{userId}"
UserId = Annotated[Id32, Path(description="User's ID.")]


@dataclass(frozen=True, slots=True)
class UserPath:
    """One user of one account, the two path parameters of ITEM (named as in the path)."""

    clientId: ClientId
    userId: UserId


AccountUser = Annotated[UserPath, Depends()]


@router.get(
    ITEM,
    summary="Get user's group",
    responses={404: {"description": "User is not found in the specified account."}},
)
async def get_client_user_role(
    user: AccountUser, session: Session, caller: CurrentCaller
) -> UserGroup:
    """The user's group in the account (`user_role` is left out for a user in no group).
    Anyone who sees the account."""
    return await manage.get(session, caller, user.clientId, user.userId)


@router.put(
    ITEM,
    summary="Change user's group",
    **answers(204, "The user's group has been successfully changed."),
)
async def update_client_user_role(
    user: AccountUser, body: UserGroupChange, session: Session, actor: CurrentActor
) -> None:
    """The user is then in exactly this group. Operators, resellers (their clients and
    themselves) and client administrators; not for one's own user."""
    await manage.change_group(session, actor, user.clientId, user.userId, body)


@router.delete(
    ITEM,
    summary="Revoke user's access to account",
    **answers(200, "The user's access has been successfully revoked."),
)
async def revoke_client_user_access(
    user: AccountUser, session: Session, actor: CurrentActor
) -> None:
    """A user has one account, so the user is deleted: its API keys stop authenticating at
    once. Same callers as the group change."""
    await manage.revoke(session, actor, user.clientId, user.userId)
