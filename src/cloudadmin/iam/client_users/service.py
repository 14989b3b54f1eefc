"""POST /iam/clients/{clientId}/client-users/create (docs/access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor
from cloudadmin.db.models import GROUPS
from cloudadmin.errors import Conflict, NotFound, PermissionDenied, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.client_users.schemas import ClientUser, ClientUserCreate, Role, UserRole
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.clients.service import NOT_FOUND
from cloudadmin.iam.users import repository as users
from cloudadmin.iam.users.service import EMAIL_TAKEN, check_password
from cloudadmin.web.idempotency import KeyClaim


def invalid_role(role: Role) -> ValidationError:
    return ValidationError.field(
        "user_role", f"Invalid role: {{'id': {role.id}, 'name': {role.name!r}}}."
    )


async def create(
    session: AsyncSession,
    actor: Actor,
    client_id: int,
    body: ClientUserCreate,
    idempotency: KeyClaim,
) -> ClientUser:
    caller = actor.caller
    account = await accounts.get_visible(session, caller, client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    if caller.is_member:
        raise PermissionDenied()
    role = body.user_role.user_role
    if GROUPS.get(role.id) != role.name:
        raise invalid_role(role)
    check_password(body.password, body.username)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    await accounts.lock_identities(session)
    if await accounts.email_taken(session, body.username):
        raise Conflict(fields={"username": [EMAIL_TAKEN]})
    group = await users.get_group(session, role.id)
    if group is None:  # the groups table is seeded by the initial migration
        raise invalid_role(role)
    user = await users.add_user(
        session, account, group, email=body.username, password=body.password, name=body.name
    )
    out = ClientUser(
        name=user.name,
        username=user.email,
        user_role=UserRole(user_role=Role(id=group.id, name=group.name)),
    )
    resource, data = Resource("user", user.id), out.model_dump(mode="json")
    await user_actions.record_change(
        session, actor, account, "create", resource, data, api_group="client_user"
    )
    return out
