"""The user-action log, scoped like the rest of the service (docs/access.md).

Operators see every account's actions; a reseller its own account's and its clients'
(the actions it may also receive over AMQP with ``receive_child_client_events``); any
other user its own account's. An action belongs to the account it concerns
(``client_id``), whoever performed it.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import visible_accounts
from cloudadmin.cloud.user_actions import repository
from cloudadmin.cloud.user_actions.repository import LogFilter
from cloudadmin.cloud.user_actions.schemas import UserAction, UserActionList
from cloudadmin.db.models import UserActionEvent
from cloudadmin.events.user_actions import as_record


def _scope(caller: Caller) -> list[ColumnElement[bool]]:
    if caller.is_operator:
        return []
    return [visible_accounts(caller, UserActionEvent.client_id)]


async def list_(
    session: AsyncSession,
    caller: Caller,
    flt: LogFilter,
    *,
    order: str,
    limit: int,
    offset: int,
) -> UserActionList:
    scope = _scope(caller)
    total = await repository.count(session, scope, flt)
    rows = await repository.page(session, scope, flt, order=order, limit=limit, offset=offset)
    return UserActionList(
        count=total,
        results=[
            UserAction.model_validate(as_record(body, acknowledged=ack)) for body, ack in rows
        ],
    )
