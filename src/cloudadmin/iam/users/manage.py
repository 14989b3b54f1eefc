"""Existing users: the account's list, one user, its PATCH and its deletion
(GET /iam/users, GET/PATCH/DELETE /iam/users/{userId}; docs/iam.md "Users").

Who may change whom (docs/access.md, "Changing users"): an operator anyone; otherwise
never an operator's user, and among the users the caller sees (its account; a
reseller's clients too) a member only itself, an administrator or a reseller anyone.
Some changes (deletion, group) are refused on one's own user, an operator's too.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Actor, Caller, CallerKind
from cloudadmin.auth.scoping import refuse_seller, require
from cloudadmin.db.models import Client, User
from cloudadmin.errors import Conflict, NotFound, PermissionDenied
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.users import repository
from cloudadmin.iam.users.schemas import User as UserOut
from cloudadmin.iam.users.schemas import UserPage, UserPatch
from cloudadmin.iam.users.service import EMAIL_TAKEN, present
from cloudadmin.kit.pagination import Paging

USER_NOT_FOUND = "User not found."
HIGHER_ROLE = "The specified user has a higher role than yours."
NOT_YOURSELF = "You cannot do this to your own user."


def check_may_change(caller: Caller, user: User, *, itself: bool) -> None:
    """403 unless ``caller`` may change ``user`` (one it sees); ``itself``: whether the
    change is allowed on the caller's own user."""
    if user.id == caller.user_id:
        if not itself:
            raise PermissionDenied(NOT_YOURSELF)
        return
    if caller.is_operator:
        return
    if user.superuser:
        raise PermissionDenied(HIGHER_ROLE)
    if caller.is_member:
        raise PermissionDenied()


async def soft_delete(
    session: AsyncSession, actor: Actor, user: User, account: Client, *, api_group: str
) -> None:
    """Marks the user deleted: its API keys stop authenticating at once."""
    user.deleted = True
    await session.flush()
    resource = Resource("user", user.id)
    await user_actions.record_change(
        session, actor, account, "delete", resource, {"deleted": True}, api_group=api_group
    )


async def list_users(session: AsyncSession, caller: Caller, page: Paging, url: URL) -> UserPage:
    """The live users of the caller's own account, by id (a seller's account is its
    reseller's: refused)."""
    refuse_seller(caller)
    total = await repository.count_account_users(session, caller.account_id)
    users = await repository.account_users_page(session, caller.account_id, page)
    account = await session.get(Client, caller.account_id)
    assert account is not None  # the caller's key was accepted: its account exists
    nxt, prev = page.links(url, count=total)
    return UserPage(
        count=total, next=nxt, previous=prev, results=[present(u, account) for u in users]
    )


async def search(
    session: AsyncSession, caller: Caller, flt: repository.UserSearch, page: Paging
) -> tuple[int, list[UserOut]]:
    """The Admin Portal's users search: the live users of every account the caller sees
    (operators: all; resellers: their own and their clients'), the count and one page.
    Operators and resellers only (403)."""
    require(caller, CallerKind.reseller)
    total = await repository.count_search(session, caller, flt)
    rows = await repository.search_page(session, caller, flt, page)
    return total, [present(user, account) for user, account in rows]


async def _visible(
    session: AsyncSession, caller: Caller, user_id: int, *, for_change: bool = False
) -> tuple[User, Client]:
    found = await repository.get_visible(session, caller, user_id, for_change=for_change)
    if found is None:
        raise NotFound(USER_NOT_FOUND)
    return found


async def get(session: AsyncSession, caller: Caller, user_id: int) -> UserOut:
    return present(*await _visible(session, caller, user_id))


async def update(session: AsyncSession, actor: Actor, user_id: int, body: UserPatch) -> UserOut:
    caller = actor.caller
    user, account = await _visible(session, caller, user_id, for_change=True)
    check_may_change(caller, user, itself=True)
    sent = body.sent()
    if "email" in sent and sent["email"].lower() != user.email.lower():
        await accounts.lock_identities(session)
        if await accounts.email_taken(session, sent["email"]):
            raise Conflict(fields={"email": [EMAIL_TAKEN]})
    await user_actions.apply_and_record(
        session, actor, account, Resource("user", user.id), user, sent
    )
    return present(user, account)


async def delete(session: AsyncSession, actor: Actor, user_id: int) -> None:
    """Resellers' DELETE /iam/users/{userId}: any user they see but their own."""
    caller = actor.caller
    require(caller, CallerKind.reseller)
    user, account = await _visible(session, caller, user_id, for_change=True)
    check_may_change(caller, user, itself=False)
    await soft_delete(session, actor, user, account, api_group="user")
