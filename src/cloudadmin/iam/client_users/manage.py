"""A user's group in an account: read, change, revoke
(GET/PUT/DELETE /iam/clients/{clientId}/client-users/{userId}; docs/iam.md).

The account must be one the caller sees (else 404, as a missing one); then members are
refused changes (403, as for the creation); then the user must be a live user of that
account (404); then the rules of iam/users/manage.check_may_change apply.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import GROUPS, Client, User
from cloudadmin.errors import NotFound, PermissionDenied
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.client_users.schemas import Role, UserGroup, UserGroupChange
from cloudadmin.iam.client_users.service import invalid_role
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.clients.service import NOT_FOUND
from cloudadmin.iam.users import manage as users
from cloudadmin.iam.users import repository as user_rows

USER_NOT_IN_ACCOUNT = "User is not found in the specified account."


async def _user_in_account(
    session: AsyncSession, caller: Caller, client_id: int, user_id: int, *, change: bool
) -> tuple[User, Client]:
    account = await accounts.get_visible(session, caller, client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    if change and caller.is_member:
        raise PermissionDenied()
    found = await user_rows.get_visible(
        session, caller, user_id, account_id=account.id, for_change=change
    )
    if found is None:
        raise NotFound(USER_NOT_IN_ACCOUNT)
    user, account = found
    if change:
        users.check_may_change(caller, user, itself=False)
    return user, account


async def get(session: AsyncSession, caller: Caller, client_id: int, user_id: int) -> UserGroup:
    """The user's group: the first by id should a user (imported) be in several."""
    user, _ = await _user_in_account(session, caller, client_id, user_id, change=False)
    if not user.groups:
        return UserGroup()
    group = user.groups[0]
    return UserGroup(user_role=Role(id=group.id, name=group.name))


async def change_group(
    session: AsyncSession, actor: Actor, client_id: int, user_id: int, body: UserGroupChange
) -> None:
    """The user is then in exactly the given group."""
    role = body.user_role
    user, account = await _user_in_account(session, actor.caller, client_id, user_id, change=True)
    if GROUPS.get(role.id) != role.name:
        raise invalid_role(role)
    group = await user_rows.get_group(session, role.id)
    if group is None:  # the groups table is seeded by the initial migration
        raise invalid_role(role)
    if [g.id for g in user.groups] == [group.id]:
        return
    user.groups = [group]
    await session.flush()
    resource, data = Resource("user", user.id), {"user_role": {"id": group.id, "name": group.name}}
    await user_actions.record_change(
        session, actor, account, "update", resource, data, api_group="client_user"
    )


async def revoke(session: AsyncSession, actor: Actor, client_id: int, user_id: int) -> None:
    """A user has one account here, so revoking its access deletes the user."""
    user, account = await _user_in_account(session, actor.caller, client_id, user_id, change=True)
    await users.soft_delete(session, actor, user, account, api_group="client_user")
