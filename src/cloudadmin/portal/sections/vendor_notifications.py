"""Vendor settings, notification settings: the addresses a reseller's notification mails
go to (``/iam/reselling/resellers/{resellerId}/notification_settings``): list, add,
edit, enable, disable, delete, through the API's service and its rules. An operator
opens any reseller's; a reseller only its own (another reseller's id, or a setting of
another reseller, is the 404 page, as in the API)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.datastructures import URL
from starlette.responses import Response

from cloudadmin.errors import NotFound
from cloudadmin.iam.reselling.notifications import service
from cloudadmin.iam.reselling.notifications.schemas import (
    NotificationSetting,
    NotificationSettingCreate,
    NotificationSettingPatch,
)
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.kit.pagination import Paging
from cloudadmin.portal.context import Portal, PortalRoute, see_other
from cloudadmin.portal.forms import Form, parse, read_form, refusals_to
from cloudadmin.portal.sections.vendor_common import BASE, VendorPage
from cloudadmin.web.idempotency import KeyClaim

router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)

TITLE = "Vendor settings: notification settings"
PAGE_SIZE = 50
TYPES = (
    ("failed_login", "Failed sign-ins"),
    ("deletion_request", "Account deletion requests"),
)
TYPE_NAMES = dict(TYPES)
SAVED = {
    "added": "The notification setting was added.",
    "saved": "The notification setting was saved.",
    "enabled": "The notification setting was enabled.",
    "disabled": "The notification setting was disabled.",
    "deleted": "The notification setting was deleted.",
}


def _list_path(reseller_id: int) -> str:
    return f"{BASE}/resellers/{reseller_id}/notifications"


def _id(value: str) -> int:
    """A typed account id, or the 404 page (as an id nobody may see)."""
    if not value.strip().isdigit() or not 0 < int(value.strip()) <= INT32_MAX:
        raise NotFound()
    return int(value.strip())


@router.get("/notifications")
async def vendor_notifications(portal: VendorPage, reseller: str = "") -> Response:
    """A reseller's own settings; an operator names the reseller (or has a reseller
    account of its own)."""
    caller = portal.caller
    if reseller:
        return see_other(_list_path(_id(reseller)))
    if caller.account_type == "reseller":
        return see_other(_list_path(caller.account_id))
    return portal.page(TITLE, "vendor/not_reseller.html", tab="notifications")


def _offset(value: str) -> int:
    return int(value) if value.isdigit() and int(value) < 1_000_000_000 else 0


async def _list_page(
    portal: Portal,
    reseller_id: int,
    *,
    form: Form | None = None,
    saved: str = "",
    offset: int = 0,
    status: int = 200,
) -> Response:
    paging = Paging(limit=PAGE_SIZE, offset=offset)
    listed = await service.list_settings(
        portal.db, portal.caller, reseller_id, paging, ["id"], URL(_list_path(reseller_id))
    )
    path = _list_path(reseller_id)
    previous = None
    if offset > 0:
        previous = f"{path}?offset={max(offset - PAGE_SIZE, 0)}"
    following = f"{path}?offset={offset + PAGE_SIZE}" if offset + PAGE_SIZE < listed.count else None
    return portal.page_or_part(
        TITLE,
        "vendor/notifications.html",
        "vendor/notification_rows.html",
        status=status,
        reseller_id=reseller_id,
        settings=listed.results,
        count=listed.count,
        previous=previous,
        following=following,
        form=form or Form(values={"notification_type": "failed_login", "enabled": "true"}),
        saved=SAVED.get(saved, ""),
        types=TYPES,
        type_names=TYPE_NAMES,
        path=path,
        tab="notifications",
    )


@router.get("/resellers/{reseller_id}/notifications")
async def vendor_notification_list(
    portal: VendorPage, reseller_id: str, saved: str = "", offset: str = "0"
) -> Response:
    return await _list_page(portal, _id(reseller_id), saved=saved, offset=_offset(offset))


def _values(form: Form) -> dict[str, Any]:
    return {
        "notification_type": form.get("notification_type"),
        "email": form.get("email").strip(),
        "enabled": form.checked("enabled"),
    }


@router.post("/resellers/{reseller_id}/notifications")
async def add_notification_setting(portal: VendorPage, reseller_id: str) -> Response:
    rid = _id(reseller_id)
    form = await read_form(portal.request)
    body = parse(NotificationSettingCreate, _values(form), form)
    if body is not None:
        no_key = KeyClaim(portal.request, portal.caller.account_id, None, "")
        with refusals_to(form):
            await service.create(portal.db, portal.actor, rid, body, no_key)
    if not form.ok:
        return await _list_page(portal, rid, form=form, status=400)
    return see_other(f"{_list_path(rid)}?saved=added")


def _edit_page(
    portal: Portal, reseller_id: int, setting: NotificationSetting, form: Form, status: int = 200
) -> Response:
    return portal.page(
        TITLE,
        "vendor/notification_edit.html",
        status=status,
        reseller_id=reseller_id,
        setting=setting,
        form=form,
        types=TYPES,
        path=_list_path(reseller_id),
        tab="notifications",
    )


@router.get("/resellers/{reseller_id}/notifications/{setting_id}")
async def vendor_notification(portal: VendorPage, reseller_id: str, setting_id: str) -> Response:
    rid, sid = _id(reseller_id), _id(setting_id)
    setting = await service.get(portal.db, portal.caller, rid, sid)
    values = {
        "notification_type": setting.notification_type,
        "email": setting.email,
        "enabled": "true" if setting.enabled else "",
    }
    return _edit_page(portal, rid, setting, Form(values=values))


@router.post("/resellers/{reseller_id}/notifications/{setting_id}")
async def update_notification_setting(
    portal: VendorPage, reseller_id: str, setting_id: str
) -> Response:
    rid, sid = _id(reseller_id), _id(setting_id)
    setting = await service.get(portal.db, portal.caller, rid, sid)
    form = await read_form(portal.request)
    body = parse(NotificationSettingPatch, _values(form), form)
    if body is not None:
        with refusals_to(form):
            await service.update(portal.db, portal.actor, rid, sid, body)
    if not form.ok:
        return _edit_page(portal, rid, setting, form, status=400)
    return see_other(f"{_list_path(rid)}?saved=saved")


async def _switch(portal: Portal, reseller_id: int, setting_id: int, enabled: bool) -> Response:
    body = NotificationSettingPatch.model_validate({"enabled": enabled})
    await service.update(portal.db, portal.actor, reseller_id, setting_id, body)
    if portal.is_htmx:
        return await _list_page(portal, reseller_id, saved="enabled" if enabled else "disabled")
    return see_other(f"{_list_path(reseller_id)}?saved={'enabled' if enabled else 'disabled'}")


@router.post("/resellers/{reseller_id}/notifications/{setting_id}/enable")
async def enable_notification_setting(
    portal: VendorPage, reseller_id: str, setting_id: str
) -> Response:
    return await _switch(portal, _id(reseller_id), _id(setting_id), True)


@router.post("/resellers/{reseller_id}/notifications/{setting_id}/disable")
async def disable_notification_setting(
    portal: VendorPage, reseller_id: str, setting_id: str
) -> Response:
    return await _switch(portal, _id(reseller_id), _id(setting_id), False)


@router.post("/resellers/{reseller_id}/notifications/{setting_id}/delete")
async def delete_notification_setting(
    portal: VendorPage, reseller_id: str, setting_id: str
) -> Response:
    rid = _id(reseller_id)
    await service.delete(portal.db, portal.actor, rid, _id(setting_id))
    if portal.is_htmx:
        return await _list_page(portal, rid, saved="deleted")
    return see_other(f"{_list_path(rid)}?saved=deleted")
