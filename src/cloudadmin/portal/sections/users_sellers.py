"""The Users section's sellers (docs/portal.md, "Users"; the provider's manuals
manage-sellers and block-activate-users-and-sellers): the list, adding a seller (which
mails its invitation), resending the invitation, resetting the password (a new
set-password mail), Block and Activate, and the deletion.

Operators manage every seller, a reseller its own (the API's seller operations and
iam/sellers/access.py); another reseller's seller is the 404 page.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import Response

from cloudadmin.errors import ApiError, NotFound
from cloudadmin.iam.sellers import access, service
from cloudadmin.iam.sellers.repository import SellerFilter
from cloudadmin.iam.sellers.schemas import SellerWrite
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.iam.users.link_deps import get_link_base
from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.portal.context import PREFIX, Portal, PortalRoute, only, see_other
from cloudadmin.portal.forms import FORM, Form, errors_of, parse, query_form, read_form
from cloudadmin.portal.sections.searched_pages import searched_page
from cloudadmin.web.app_state import app_state
from cloudadmin.web.idempotency import KeyClaim

BASE = f"{PREFIX}/users/sellers"
MAX_SEARCH = 254
SellersPage = Depends(only(PortalKind.operator, PortalKind.reseller))
NOTICES = {
    "added": "The seller was added and its invitation mailed.",
    "resent": "A new invitation was mailed.",
    "reset": "A mail with a link to set a new password was sent.",
    "blocked": "The seller is blocked: it cannot sign in.",
    "activated": "The seller is active again.",
    "deleted": "The seller was deleted.",
}

router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)


def _tokens(portal: Portal) -> SetPasswordTokens:
    return access.seller_tokens(tuple(app_state(portal.request.app).settings.secret_keys()))


async def _links(portal: Portal) -> dict[str, Any]:
    """What mailing a link takes: the tokens, the secret box, the portal's address."""
    return {
        "tokens": _tokens(portal),
        "box": app_state(portal.request.app).secret_box,
        "base_url": await get_link_base(portal.request),
    }


def _seller_id(seller_id: int) -> int:
    """An id no row can have is not found, as one of another tenant."""
    if not 1 <= seller_id <= INT32_MAX:
        raise NotFound()
    return seller_id


def _query_form(portal: Portal) -> Form:
    """The list's query string as a form: what was typed, kept for the redisplay."""
    return query_form(portal.request, max_chars=MAX_SEARCH)


async def _list_page(portal: Portal, *, message: str = "", status: int = 200) -> Response:
    form = _query_form(portal)
    filters = {k: form.get(k).strip() for k in ("name", "email") if form.get(k).strip()}
    flt = SellerFilter(
        full_name=form.text_or_none("name"), email=form.text_or_none("email"), deleted=False
    )
    raw_page = form.get("page").strip()
    number = int(raw_page) if raw_page.isdigit() and 1 <= int(raw_page) <= 1_000_000 else 1
    listed = await searched_page(
        BASE,
        filters,
        number,
        lambda paging: access.portal_page(portal.db, portal.caller, flt, paging),
    )
    notice = "" if message else NOTICES.get(form.get("notice"), "")
    return portal.page_or_part(
        "Sellers",
        "users/sellers.html",
        "users/seller_results.html",
        status=status,
        form=form,
        filters=filters,
        **listed,
        notice=notice,
        message=message,
        operator=portal.user.kind is PortalKind.operator,
    )


@router.get("")
async def sellers_index(portal: Portal = SellersPage) -> Response:
    """The sellers the signed-in person manages, with their status and actions."""
    return await _list_page(portal)


def _new_page(portal: Portal, form: Form, *, status: int = 200) -> Response:
    return portal.page(
        "Add a seller",
        "users/seller_new.html",
        status=status,
        form=form,
        operator=portal.user.kind is PortalKind.operator,
    )


@router.get("/new")
async def new_seller_form(portal: Portal = SellersPage) -> Response:
    return _new_page(portal, Form())


@router.post("/new")
async def add_seller(portal: Portal = SellersPage) -> Response:
    """Adds the seller (the API's creation) and mails its invitation: a link that sets
    its password, valid 24 hours."""
    form = await read_form(portal.request)
    values: dict[str, Any] = {
        "email": form.get("email").strip(),
        "full_name": form.get("full_name"),
        "phone": form.get("phone").strip() or None,
    }
    if portal.user.kind is PortalKind.operator:
        values["reseller"] = form.get("reseller").strip() or None
    body = parse(SellerWrite, values, form)
    if body is None:
        return _new_page(portal, form, status=400)
    idempotency = KeyClaim(portal.request, portal.caller.account_id, None, "")
    try:
        await access.add(portal.db, portal.actor, body, idempotency, **await _links(portal))
    except ApiError as refused:
        if refused.status_code in (403, 404):
            raise
        form.refuse(errors_of(refused))
        return _new_page(portal, form, status=400)
    return see_other(f"{BASE}?notice=added")


async def _act(portal: Portal, act: Any, notice: str) -> Response:
    """One action of the list: done, then the list with its notice; refused (a blocked
    seller's invitation, say), the list with the reason (400, nothing written)."""
    try:
        await act
    except ApiError as refused:
        if refused.status_code in (403, 404):
            raise
        message = errors_of(refused).get(FORM) or refused.message
        return await _list_page(portal, message=message, status=400)
    return see_other(f"{BASE}?notice={notice}")


@router.post("/{seller_id}/resend")
async def resend_seller_invitation(seller_id: int, portal: Portal = SellersPage) -> Response:
    """A new invitation for a seller who has not set its password yet."""
    act = access.send_link(
        portal.db, portal.actor, _seller_id(seller_id), reset=False, **await _links(portal)
    )
    return await _act(portal, act, "resent")


@router.post("/{seller_id}/reset-password")
async def reset_seller_password(seller_id: int, portal: Portal = SellersPage) -> Response:
    """A mail with a link that sets a new password; the old one works until then."""
    act = access.send_link(
        portal.db, portal.actor, _seller_id(seller_id), reset=True, **await _links(portal)
    )
    return await _act(portal, act, "reset")


@router.post("/{seller_id}/block")
async def block_seller(seller_id: int, portal: Portal = SellersPage) -> Response:
    """The seller can no longer sign in (its sessions end) nor set a password."""
    act = access.set_blocked(portal.db, portal.actor, _seller_id(seller_id), True)
    return await _act(portal, act, "blocked")


@router.post("/{seller_id}/activate")
async def activate_seller(seller_id: int, portal: Portal = SellersPage) -> Response:
    """Lifts a block."""
    act = access.set_blocked(portal.db, portal.actor, _seller_id(seller_id), False)
    return await _act(portal, act, "activated")


@router.get("/{seller_id}/delete")
async def delete_seller_form(seller_id: int, portal: Portal = SellersPage) -> Response:
    """Asks before deleting."""
    seller = await service.get(portal.db, portal.caller, _seller_id(seller_id))
    if seller.deleted:
        raise NotFound()
    return portal.page("Delete a seller", "users/seller_delete.html", seller=seller)


@router.post("/{seller_id}/delete")
async def delete_seller(seller_id: int, portal: Portal = SellersPage) -> Response:
    """The API's deletion: the seller is marked deleted, unassigned from its clients,
    and signed out."""
    act = access.delete_seller(portal.db, portal.actor, _seller_id(seller_id))
    return await _act(portal, act, "deleted")
