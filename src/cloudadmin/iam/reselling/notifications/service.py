"""Notification settings of one reseller (docs/access.md): operator, or the reseller
whose id it is; another reseller's id is a 404."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Actor, Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.db.models import NotificationSetting as Row
from cloudadmin.errors import NotFound
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.reselling.branding.repository import get_reseller
from cloudadmin.iam.reselling.notifications import repository
from cloudadmin.iam.reselling.notifications.schemas import (
    NotificationSetting,
    NotificationSettingCreate,
    NotificationSettingPage,
    NotificationSettingPatch,
)
from cloudadmin.kit.from_row import from_row
from cloudadmin.kit.ordering import parse_ordering
from cloudadmin.kit.pagination import Paging
from cloudadmin.web.idempotency import KeyClaim

ORDERING = {
    "id": Row.id,
    "reseller": Row.reseller_id,
    "notification_type": Row.notification_type,
    "email": Row.email,
    "enabled": Row.enabled,
}
RESELLER_NOT_FOUND = "Reseller not found."
SETTING_NOT_FOUND = "Notification setting not found."


def _out(row: Row) -> NotificationSetting:
    return from_row(NotificationSetting, row, reseller=row.reseller_id)


async def _reseller(session: AsyncSession, caller: Caller, reseller_id: int) -> Client:
    require(caller, CallerKind.reseller)
    if not caller.is_operator and reseller_id != caller.account_id:
        raise NotFound(RESELLER_NOT_FOUND)
    reseller = await get_reseller(session, reseller_id)
    if reseller is None:
        raise NotFound(RESELLER_NOT_FOUND)
    return reseller


async def _setting(
    session: AsyncSession,
    caller: Caller,
    reseller_id: int,
    setting_id: int,
    *,
    for_change: bool = False,
    removal: bool = False,
) -> tuple[Client, Row]:
    reseller = await _reseller(session, caller, reseller_id)
    row = await repository.get(
        session, reseller.id, setting_id, for_change=for_change, removal=removal
    )
    if row is None:
        raise NotFound(SETTING_NOT_FOUND)
    return reseller, row


async def _record(
    session: AsyncSession,
    actor: Actor,
    reseller: Client,
    row_id: int,
    action: str,
    data: dict[str, Any],
) -> None:
    resource = Resource("notification_setting", row_id)
    await user_actions.record_change(
        session, actor, reseller, action, resource, data, api_group="notification_settings"
    )


async def list_settings(
    session: AsyncSession,
    caller: Caller,
    reseller_id: int,
    page: Paging,
    ordering: list[str] | None,
    url: URL,
) -> NotificationSettingPage:
    reseller = await _reseller(session, caller, reseller_id)
    order_by = parse_ordering(ordering, ORDERING, tiebreak=Row.id)
    total = await repository.count(session, reseller.id)
    rows = await repository.page(session, reseller.id, order_by, page)
    nxt, prev = page.links(url, count=total)
    return NotificationSettingPage(
        count=total, next=nxt, previous=prev, results=[_out(r) for r in rows]
    )


async def get(
    session: AsyncSession, caller: Caller, reseller_id: int, setting_id: int
) -> NotificationSetting:
    return _out((await _setting(session, caller, reseller_id, setting_id))[1])


async def create(
    session: AsyncSession,
    actor: Actor,
    reseller_id: int,
    body: NotificationSettingCreate,
    idempotency: KeyClaim,
) -> NotificationSetting:
    reseller = await _reseller(session, actor.caller, reseller_id)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    row = Row(
        reseller_id=reseller.id,
        notification_type=body.notification_type,
        email=body.email,
        enabled=body.enabled,
    )
    session.add(row)
    await session.flush()
    await _record(session, actor, reseller, row.id, "create", body.model_dump(mode="json"))
    return _out(row)


async def update(
    session: AsyncSession,
    actor: Actor,
    reseller_id: int,
    setting_id: int,
    body: NotificationSettingPatch,
) -> NotificationSetting:
    reseller, row = await _setting(session, actor.caller, reseller_id, setting_id, for_change=True)
    sent = body.sent()
    changes = {k: v for k, v in sent.items() if getattr(row, k) != v}
    for name, value in changes.items():
        setattr(row, name, value)
    await session.flush()
    if changes:
        await _record(session, actor, reseller, row.id, "update", changes)
    return _out(row)


async def delete(session: AsyncSession, actor: Actor, reseller_id: int, setting_id: int) -> None:
    reseller, row = await _setting(
        session, actor.caller, reseller_id, setting_id, for_change=True, removal=True
    )
    await session.delete(row)
    await session.flush()
    await _record(session, actor, reseller, setting_id, "delete", {})
