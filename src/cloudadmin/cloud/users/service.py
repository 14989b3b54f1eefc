"""Cloud users: the users of the caller's own account (docs/access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.cloud.users import repository
from cloudadmin.cloud.users.schemas import CloudUser, CloudUserList
from cloudadmin.db.models import User
from cloudadmin.db.models.accounts import ADMINISTRATORS
from cloudadmin.kit.pagination import Paging


def _out(user: User) -> CloudUser:
    return CloudUser(
        activated=user.activated,
        email=user.email,
        id=user.id,
        is_admin=ADMINISTRATORS in user.group_ids,
        name=user.name or "",
    )


async def list_users(
    session: AsyncSession, caller: Caller, page: Paging, *, user_id: int | None
) -> CloudUserList:
    count, users = await repository.list_of_account(
        session, caller.account_id, page, user_id=user_id
    )
    return CloudUserList(count=count, results=[_out(u) for u in users])
