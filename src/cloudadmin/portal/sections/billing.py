"""The Billing section (docs/portal.md, "Billing"): the addendum browser over the whole
table, its filtered list as a streamed CSV, and a chart of active addendums per product
over the last twelve months. The monthly reports are billing_reports.py's.

The browser parses its query string into the API's own query model and calls the
service the API's list endpoint calls (billing/addendums/service.py ``list_addendums``):
the same filters and messages, the same scope (an operator sees every addendum, a
reseller those of its clients), the same plans for every shape of request, and the
page's rows are the service's answer, with no query of their own. The CSV reads the
same filters, scope and order through one server-side cursor (billing/addendums/
export.py); the chart's figures come from one grouped statement (chart.py).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends
from markupsafe import Markup
from pydantic_core import from_json
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import HTMLResponse, Response

from cloudadmin.billing.addendums import export, service
from cloudadmin.billing.addendums.chart import ActiveByMonth, active_by_month
from cloudadmin.billing.catalogue import CURRENCY_CODES, PRODUCTS, STATUSES
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.portal.context import Portal, PortalRoute, only
from cloudadmin.portal.csv_export import csv_text_download
from cloudadmin.portal.forms import FORM, errors_of
from cloudadmin.portal.memo import Memo
from cloudadmin.portal.pages import fragment
from cloudadmin.portal.sections import billing_chart, billing_results, billing_table
from cloudadmin.portal.sections.billing_query import Browse, limit_choices, read_browse
from cloudadmin.portal.sections.billing_results import BASE
from cloudadmin.web.app_state import app_state

router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)

# Operators and resellers' users (docs/access.md); a seller gets the 404 page.
BillingPage = Annotated[Portal, Depends(only(PortalKind.operator, PortalKind.reseller))]

TITLE = "Billing: addendums"
# The filters shown under "More filters" (the others are always in view).
MORE = (
    "id",
    "addendum_id",
    "payer_id",
    "provider_id",
    "reseller_id",
    "plan_id",
    "plan_name",
    "product_id",
    "product_name",
    "currency_id",
    "currency_char_code",
    "active_at",
    "not_active_at",
    "active_after",
    "active_before",
    "active_start_from",
    "active_start_to",
    "active_end_from",
    "active_end_to",
    "created_on",
)
PRODUCT_CHOICES = sorted(PRODUCTS.values())


def _wants_part(portal: Portal) -> bool:
    """htmx swaps the results; a history restore asks for the whole page."""
    return portal.is_htmx and portal.request.headers.get("HX-History-Restore-Request") != "true"


def _relative(link: str | None) -> str:
    """A link of the service's page (absolute, as the API gives it) within this site."""
    if not link:
        return ""
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def _sort_key(browse: Browse) -> str:
    """The ordering's first field, as the column heads mark it."""
    first = browse.ordering.split(",")[0].strip()
    return first


# The filter form is the same for every page and order of one set of filters (about a
# fifth of the page's CPU when rendered each time): rendered once per distinct form.
FORMS_KEPT = 256
_FORMS: Memo[Markup] = Memo(FORMS_KEPT)
KEPT_FORM_CHARS = 2_000  # what was typed, at most, in a form kept
_NOT_IN_THE_FORM = frozenset({"ordering", "offset"})  # the order and page: not shown there


def filters_form(browse: Browse) -> Markup:
    """The filter form as ``browse`` has it typed, with its messages."""
    form = browse.form
    key = (
        tuple((n, tuple(v)) for n, v in form.lists.items() if n not in _NOT_IN_THE_FORM),
        tuple(form.errors.items()),
        browse.limit,
    )
    typed = sum(len(v) for values in form.lists.values() for v in values)
    return _FORMS.get(
        key,
        lambda: fragment(
            "billing/filters.html",
            form=form,
            browse=browse,
            more_open=any(name in form.lists or name in form.errors for name in MORE),
            statuses=STATUSES,
            currencies=CURRENCY_CODES,
            products=PRODUCT_CHOICES,
            limits=limit_choices(browse.limit),
        ),
        keep=typed <= KEPT_FORM_CHARS,
    )


# The column heads are the same for every page of one list and order: made once per
# distinct list and order (bounded, as the forms are).
_HEADS: Memo[Markup] = Memo(FORMS_KEPT)


def column_heads(browse: Browse, *, active_at: bool) -> Markup:
    """The table's heads, each linking to the list ordered by its column."""
    sort_key = _sort_key(browse)
    return _HEADS.get(
        (sort_key, browse.encoded_filters, browse.limit, active_at),
        lambda: billing_table.heads(
            sort_key, lambda field: browse.ordered_link(BASE, field), active_at=active_at
        ),
        keep=len(browse.encoded_filters) <= KEPT_FORM_CHARS,
    )


def _page_values(portal: Portal, browse: Browse, found: dict[str, Any] | None) -> dict[str, Any]:
    limit = browse.limit
    values: dict[str, Any] = {
        "form": browse.form,
        "browse": browse,
        "found": found,
        "csv_link": browse.link(f"{BASE}/export.csv", paging=False),
        "chart_link": browse.link(f"{BASE}/chart", paging=False, ordering=None),
        "active_at": browse.query.active_at if browse.query else None,
    }
    if found is not None:
        count = found["count"]
        pages = max(1, math.ceil(count / limit))
        page = browse.offset // limit + 1
        values |= {
            "count": count,
            "rows": billing_table.rows(found["results"], active_at=bool(values["active_at"])),
            "heads": column_heads(browse, active_at=bool(values["active_at"])),
            "page": page,
            "pages": pages,
            "next": _relative(found["next"]),
            "previous": _relative(found["previous"]),
            "first": browse.link(BASE, offset=None) if browse.offset else "",
            "last": browse.link(BASE, offset=(pages - 1) * limit) if page < pages else "",
            "jump_fields": [*browse.filters, *_paging_fields(browse)],
        }
    return values


def _paging_fields(browse: Browse) -> list[tuple[str, str]]:
    fields = [("limit", str(browse.limit))]
    if browse.ordering:
        fields.append(("ordering", browse.ordering))
    return fields


# Parameters without a field of their own: their messages are the form's.
_UNSHOWN = {"ordering": "The order", "offset": "The offset", "page": "The page"}


def _answer(portal: Portal, browse: Browse, found: dict[str, Any] | None) -> Response:
    status = 200 if found is not None else 400
    errors = browse.form.errors
    for name, what in _UNSHOWN.items():
        if name in errors:
            message = f"{what} ({name}): {errors.pop(name)}"
            errors[FORM] = f"{errors[FORM]} {message}" if FORM in errors else message
    values = _page_values(portal, browse, found)
    part = billing_results.results(values)
    if _wants_part(portal):
        response = HTMLResponse(part, status_code=status)
        if status != 200:
            # htmx does not swap a refusal in: the browser loads the whole page, which
            # shows the fields' messages (the same address: the same refusal).
            response.headers["HX-Redirect"] = str(portal.request.url)
        return response
    return portal.page(
        TITLE,
        "billing/index.html",
        status=status,
        filters_form=filters_form(browse),
        results=part,
        chart_link=values["chart_link"],
    )


@asynccontextmanager
async def _read_connection(portal: Portal) -> AsyncIterator[AsyncConnection]:
    """The page's own connection: a page that reads runs without a transaction, as the
    API's list does (portal/context.py), so the chart's statement runs on the driver
    with nothing to commit first, and the request holds one pooled connection."""
    yield await portal.database.connection()


async def _found(portal: Portal, browse: Browse) -> dict[str, Any] | None:
    """The service's page for the browse's query; None with the form's messages when the
    service refuses it (an unknown ordering field)."""
    if browse.query is None:
        return None
    conn = await portal.database.connection()
    try:
        body = await service.list_addendums(
            conn, portal.caller, browse.query, url=portal.request.url
        )
    except ValidationError as refused:
        browse.form.refuse(errors_of(refused))
        browse.query = None
        return None
    found: dict[str, Any] = from_json(body)
    return found


@router.get("")
async def billing_index(portal: BillingPage) -> Response:
    """The addendums the user sees, with every filter of the API's list, sortable
    columns and pages (``/portal/billing?client_id=<id>``: one client's)."""
    browse = read_browse(portal.request.query_params)
    return _answer(portal, browse, await _found(portal, browse))


@router.get("/export.csv")
async def export_addendums_csv(portal: BillingPage) -> Response:
    """The filtered list, every row in the list's order, as CSV: its lines written by the
    database and streamed through a server-side cursor, constant memory whatever its
    size."""
    browse = read_browse(portal.request.query_params)
    query, caller = browse.query, portal.caller
    if query is not None:
        try:  # a bad ordering field is refused before the download starts
            service.plan(query, caller, app_state(portal.request.app).engine.dialect.name)
        except ValidationError as refused:
            browse.form.refuse(errors_of(refused))
            query = browse.query = None
    if query is None:
        return _answer(portal, browse, None)
    checked = query

    def lines(conn: AsyncConnection) -> AsyncIterator[str]:
        return export.stream_csv_lines(conn, caller, checked)

    name = f"addendums-{utcnow().strftime('%Y%m%dT%H%M%SZ')}.csv"
    return csv_text_download(portal.request, name, export.HEADER, lines, cursor=True)


async def _chart(portal: Portal, browse: Browse) -> ActiveByMonth | None:
    if browse.query is None:
        return None
    async with _read_connection(portal) as conn:
        return await active_by_month(conn, portal.caller, browse.query)


@router.get("/chart")
async def addendums_chart(portal: BillingPage) -> Response:
    """Active addendums per product over the last twelve months, for the list's filters:
    the chart (an SVG image) and its figures as a table."""
    browse = read_browse(portal.request.query_params)
    chart = await _chart(portal, browse)
    if chart is None:
        return _answer(portal, browse, None)
    filters = browse.link("", paging=False, ordering=None).lstrip("?")
    return portal.page(
        "Billing: active addendums per product",
        "billing/chart.html",
        chart=chart,
        browse=browse,
        title_text=billing_chart.title_text(chart),
        period=billing_chart.period_text(chart),
        month_label=billing_chart.month_label,
        svg_link=f"{BASE}/chart.svg" + (f"?{filters}" if filters else ""),
        list_link=browse.link(BASE, paging=False, ordering=None),
    )


@router.get("/chart.svg")
async def addendums_chart_svg(portal: BillingPage) -> Response:
    """The chart as an SVG image (the list's filters in its query string)."""
    browse = read_browse(portal.request.query_params)
    chart = await _chart(portal, browse)
    if chart is None:
        return _answer(portal, browse, None)
    return Response(billing_chart.draw(chart), media_type="image/svg+xml")
