"""POST /iam/users ; the account's users: list, read, PATCH, DELETE ; invitations:
POST /iam/clients/invite_user and the link's POST /iam/auth/set-password."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from cloudadmin.iam.users import invitations, manage, service
from cloudadmin.iam.users.link_deps import LinkBase, SetPasswordTokensDep, note_refused_token
from cloudadmin.iam.users.schemas import (
    InviteUser,
    SetPassword,
    User,
    UserCreate,
    UserCreated,
    UserInvited,
    UserPage,
    UserPatch,
)
from cloudadmin.kit.ints import Id32
from cloudadmin.kit.params import WholeListPage
from cloudadmin.web.deps import AppSecretBox, CurrentActor, CurrentCaller, Session, WriteSession
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


@router.post("/iam/clients/invite_user", summary="Invite new user")
async def invite_user(
    body: InviteUser,
    session: Session,
    actor: CurrentActor,
    idempotency: Idempotent,
    tokens: SetPasswordTokensDep,
    box: AppSecretBox,
    base_url: LinkBase,
) -> UserInvited:
    """Creates the user in `client_id`'s account, not activated and without a password,
    and mails it a link that sets its password (once, within 24 hours), through the
    reseller's mail server. Who may: as for creating a user of that account. Inviting
    again a user who has not set its password yet mails a new link."""
    return await invitations.invite(
        session, actor, body, idempotency, tokens=tokens, box=box, base_url=base_url
    )


@router.post(
    "/iam/auth/set-password",
    summary="Set a password with a link's token",
    **answers(204, "The password is set; the token is used up."),
)
async def set_user_password(
    request: Request, body: SetPassword, session: WriteSession, tokens: SetPasswordTokensDep
) -> None:
    """Public (no API key): the token of an invitation's link and the new password (the
    rules of user creation). A token works once and for 24 hours; a used, expired or
    unknown one is a 400 naming `token`."""
    try:
        await invitations.set_password(session, tokens, body)
    except invitations.TokenRefused:
        await note_refused_token(request)
        raise
