"""Notification settings of a reseller (operations 9-11, plus read and delete)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from cloudadmin.iam.reselling.notifications import service
from cloudadmin.iam.reselling.notifications.schemas import (
    NotificationSetting,
    NotificationSettingCreate,
    NotificationSettingPage,
    NotificationSettingPatch,
)
from cloudadmin.kit.ints import Id32
from cloudadmin.kit.params import WholeListPage, ordering_query
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Notification settings"])

ResellerId = Annotated[Id32, Path()]
SettingId = Annotated[Id32, Path()]
BASE = "/iam/reselling/resellers/{resellerId}/notification_settings"
ITEM = BASE + "/{notificationSettingsId}"
SettingOrdering = Annotated[
    list[str] | None,
    ordering_query("Fields id, reseller, notification_type, email, enabled", "-id"),
]


@dataclass(frozen=True, slots=True)
class SettingPath:
    """One setting's address, the two path parameters of ITEM (named as in the path)."""

    resellerId: ResellerId
    notificationSettingsId: SettingId


Setting = Annotated[SettingPath, Depends()]


@router.get(BASE, summary="List notification settings")
async def list_notification_settings(
    request: Request,
    resellerId: ResellerId,
    session: Session,
    caller: CurrentCaller,
    page: WholeListPage,
    ordering: SettingOrdering = None,
) -> NotificationSettingPage:
    return await service.list_settings(session, caller, resellerId, page, ordering, request.url)


@router.post(BASE, status_code=201, summary="Create a notification setting")
async def create_notification_setting(
    resellerId: ResellerId,
    body: NotificationSettingCreate,
    session: Session,
    actor: CurrentActor,
    idempotency: Idempotent,
) -> NotificationSetting:
    return await service.create(session, actor, resellerId, body, idempotency)


@router.get(ITEM, summary="Read a notification setting")
async def get_notification_setting(
    setting: Setting, session: Session, caller: CurrentCaller
) -> NotificationSetting:
    return await service.get(session, caller, setting.resellerId, setting.notificationSettingsId)


@router.patch(ITEM, summary="Update a notification setting")
async def update_notification_setting(
    setting: Setting, body: NotificationSettingPatch, session: Session, actor: CurrentActor
) -> NotificationSetting:
    return await service.update(
        session, actor, setting.resellerId, setting.notificationSettingsId, body
    )


@router.delete(ITEM, summary="Delete a notification setting")
async def delete_notification_setting(
    setting: Setting, session: Session, actor: CurrentActor
) -> None:
    await service.delete(session, actor, setting.resellerId, setting.notificationSettingsId)
