"""The Accounts section (docs/portal.md, "Accounts"): the visible client accounts with
the provider's quick filters, sortable columns and pages, saved filter presets per
person, and the filtered list as a streamed CSV. One account's page, its creation,
editing and deletion are in accounts_edit.py (portal/routes.py puts its routes after these).

Every read and change calls the API's own services (iam/clients, iam/users): the same
rules and tenancy; a reseller sees its clients, an operator every account.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from pydantic import ValidationError as PydanticValidationError
from starlette.responses import Response

from cloudadmin.auth.scoping import require
from cloudadmin.iam.clients import search as accounts_search
from cloudadmin.iam.clients.search import AccountSearch
from cloudadmin.iam.sign_in import preferences
from cloudadmin.portal.context import PREFIX, AdminPage, Portal, PortalRoute, see_other
from cloudadmin.portal.csv_export import csv_download
from cloudadmin.portal.forms import FORM, Form, query_form, read_form
from cloudadmin.portal.sections.accounts_common import (
    NOTICES,
    PRODUCTS,
    STATUSES,
    seller_options,
)

router = APIRouter(prefix=f"{PREFIX}/accounts", route_class=PortalRoute, include_in_schema=False)
BASE = f"{PREFIX}/accounts"

PRESETS = "accounts.presets"
MAX_PRESETS = 20
MAX_PRESET_NAME = 60
SHOWN = {
    "test": [("hide", "Hidden"), ("only", "Only test accounts"), ("any", "Shown")],
    "deleted": [("hide", "Hidden"), ("only", "Only deleted accounts"), ("any", "Shown")],
}


def _query_form(portal: Portal) -> Form:
    """The list's query string as a form: what was typed, kept for the redisplay."""
    return query_form(portal.request)


def _search_of(form: Form) -> AccountSearch | None:
    if form.errors:  # a text no column can store (forms.query_form)
        return None
    try:
        return AccountSearch.model_validate(form.values)
    except PydanticValidationError as invalid:
        for error in invalid.errors():
            loc = [str(p) for p in error.get("loc", ()) if not isinstance(p, int)]
            form.errors.setdefault(loc[0] if loc else FORM, str(error.get("msg", "")))
        return None


def _link(filters: dict[str, str], **more: Any) -> str:
    params = {**filters, **{k: str(v) for k, v in more.items() if v is not None}}
    return BASE + ("?" + urlencode(params) if params else "")


async def _presets(portal: Portal) -> list[dict[str, Any]]:
    value = await preferences.get(portal.db, portal.user.principal, PRESETS, [])
    return [p for p in value if isinstance(p, dict)] if isinstance(value, list) else []


async def _list_page(
    portal: Portal, form: Form, search: AccountSearch | None, *, preset_form: Form | None = None
) -> Response:
    status = 200
    filters: dict[str, str] = {}
    found = None
    ordering = "id"
    if search is not None:
        filters = search.filters()
        ordering = search.ordering
        found = await accounts_search.search_page(portal.db, portal.caller, search)
    else:
        status = 400
    if preset_form is not None and preset_form.errors:
        status = 400
    sellers = await seller_options(portal)
    seller_names = dict(sellers)
    values: dict[str, Any] = {
        "form": form,
        "preset_form": preset_form,
        "found": found,
        "filters": filters,
        "ordering": ordering,
        "sort_link": lambda order: _link(filters, ordering=order),
        "page_link": lambda page: _link(filters, ordering=ordering, page=page),
        "csv_link": f"{BASE}/export.csv?" + urlencode({**filters, "ordering": ordering}),
        "seller_names": seller_names,
        "seller_choices": [("", "Any")] + [(str(k), v) for k, v in sellers],
        "status_choices": [("", "Any")] + [(s, s.capitalize()) for s in STATUSES],
        "shown": SHOWN,
        "presets": [
            {"name": p.get("name", ""), "link": _link(p.get("filters", {}))}
            for p in await _presets(portal)
        ],
        "notice": NOTICES.get(portal.request.query_params.get("notice", "")),
        "products": PRODUCTS,
    }
    # A history restore asks for the whole page even though htmx asks.
    if portal.is_htmx and portal.request.headers.get("HX-History-Restore-Request") != "true":
        part = portal.part("accounts/results.html", status=status, **values)
        if status >= 400:
            # htmx swaps no refusal in: it loads the whole page, the filters' messages.
            url = portal.request.url
            part.headers["HX-Redirect"] = url.path + (f"?{url.query}" if url.query else "")
        return part
    return portal.page("Accounts", "accounts/list.html", status=status, **values)


@router.get("")
async def accounts_index(portal: AdminPage) -> Response:
    """The accounts the user sees, filtered, sorted and a page at a time."""
    form = _query_form(portal)
    return await _list_page(portal, form, _search_of(form))


@router.get("/export.csv")
async def export_accounts(portal: AdminPage) -> Response:
    """The filtered list, every page, as CSV: streamed from the database."""
    form = _query_form(portal)
    search = _search_of(form)
    if search is None:
        return await _list_page(portal, form, None)
    require(portal.caller, *accounts_search.LISTERS)
    caller = portal.caller
    return csv_download(
        portal.request,
        "accounts.csv",
        accounts_search.EXPORT_HEADER,
        lambda conn: accounts_search.export_rows(conn, caller, search),
    )


@router.post("/presets")
async def save_accounts_preset(portal: AdminPage) -> Response:
    """Keeps the current filters under a name (the same name replaces its preset)."""
    posted = await read_form(portal.request)
    name = posted.get("preset_name").strip()
    filter_form = Form(values={k: v for k, v in posted.values.items() if k != "preset_name"})
    search = _search_of(filter_form)
    presets = await _presets(portal)
    others = [p for p in presets if p.get("name") != name]
    if not name:
        posted.errors.setdefault("preset_name", "Give the preset a name.")
    elif len(name) > MAX_PRESET_NAME:
        posted.errors.setdefault("preset_name", f"At most {MAX_PRESET_NAME} characters.")
    elif len(others) >= MAX_PRESETS:
        posted.errors.setdefault("preset_name", f"At most {MAX_PRESETS} presets: delete one first.")
    if search is None:
        posted.errors.setdefault(FORM, "The filters are not valid.")
    if posted.errors or search is None:
        return await _list_page(portal, filter_form, search, preset_form=posted)
    await preferences.put(
        portal.db,
        portal.user.principal,
        PRESETS,
        [*others, {"name": name, "filters": search.filters()}],
    )
    return see_other(_link(search.filters(), notice="preset-saved"))


@router.post("/presets/delete")
async def delete_accounts_preset(portal: AdminPage) -> Response:
    """Forgets a preset (one that is not there: nothing to do)."""
    posted = await read_form(portal.request)
    name = posted.get("preset_name")
    presets = await _presets(portal)
    kept = [p for p in presets if p.get("name") != name]
    if len(kept) != len(presets):
        await preferences.put(portal.db, portal.user.principal, PRESETS, kept)
    return see_other(_link({}, notice="preset-deleted"))
