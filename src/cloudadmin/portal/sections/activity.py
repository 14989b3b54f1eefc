"""The Activity logs section (docs/portal.md, "Activity logs"): the API's list of logged
requests (GET /iam/activity_log/requests) with all its filters and a time range, the
columns a person chose (kept per person), one record, and the filtered list as CSV.

The same service functions as the API's endpoints: who sees what is theirs
(docs/access.md); another tenant's record is the 404 page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound
from cloudadmin.iam.activity_log import service
from cloudadmin.iam.activity_log.schemas import ActivityLogRecord
from cloudadmin.iam.sign_in import preferences
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.kit.ints import INT64_MAX
from cloudadmin.kit.timeparse import isoformat_z
from cloudadmin.portal.context import PREFIX, OperatorOrReseller, Portal, PortalRoute, see_other
from cloudadmin.portal.csv_export import csv_download
from cloudadmin.portal.forms import FORM, UNSTORABLE, Form, read_form
from cloudadmin.portal.sections.activity_filters import (
    COLUMNS,
    DEFAULT_COLUMNS,
    RANGES,
    read_filters,
)

router = APIRouter(prefix=f"{PREFIX}/activity", route_class=PortalRoute, include_in_schema=False)

COLUMNS_PREFERENCE = "activity.columns"
TITLE = "Activity logs"
ROWS_PER_PAGE = 25


async def _columns(portal: Portal) -> list[str]:
    """The columns the person chose (the known ones, in the table's order)."""
    chosen = await preferences.get(portal.db, portal.user.principal, COLUMNS_PREFERENCE)
    if not isinstance(chosen, list):
        return list(DEFAULT_COLUMNS)
    known = [key for key, _label in COLUMNS if key in chosen]
    return known or list(DEFAULT_COLUMNS)


def _query_without_paging(request: Request) -> str:
    kept = [
        (name, value)
        for name, value in parse_qsl(request.url.query, keep_blank_values=False)
        if name not in ("offset", "limit")
    ]
    return urlencode(kept)


async def _list_page(
    portal: Portal, *, columns_form: Form | None = None, status: int = 200
) -> Response:
    request = portal.request
    form, flt, limit, offset = read_filters(request.query_params, now=utcnow())
    listed = None
    if flt is not None:
        listed = await service.list_requests(
            portal.db, portal.caller, flt, limit=limit, offset=offset, url=request.url
        )
    chosen = await _columns(portal)
    if columns_form is not None and columns_form.errors:
        chosen = [key for key, _ in COLUMNS if key in columns_form.lists.get("columns", [])]
    status = 400 if flt is None else status
    values: dict[str, Any] = dict(
        form=form,
        listed=listed,
        columns=[(key, label) for key, label in COLUMNS if key in chosen],
        all_columns=COLUMNS,
        chosen=chosen,
        columns_form=columns_form,
        ranges_options=[(key, label) for key, label, _delta in RANGES],
        operator=portal.user.kind is PortalKind.operator,
        query=_query_without_paging(request),
        offset=offset,
        limit=limit,
    )
    response = portal.page_or_part(
        TITLE, "activity/list.html", "activity/results.html", status=status, **values
    )
    if portal.is_htmx and status >= 400:
        # htmx swaps no error answer: the whole page is loaded instead, with the messages.
        response.headers["HX-Redirect"] = str(request.url)
    return response


@router.get("")
async def activity_index(portal: OperatorOrReseller) -> Response:
    return await _list_page(portal)


@router.get("/export.csv")
async def export_activity_csv(portal: OperatorOrReseller) -> Response:
    """The filtered list as CSV, every field, streamed (docs/portal.md)."""
    form, flt, _limit, _offset = read_filters(portal.request.query_params, now=utcnow())
    if flt is None:
        return await _list_page(portal)
    caller = portal.caller

    async def rows(conn: AsyncConnection) -> AsyncIterator[Sequence[Any]]:
        async for row in service.stream_requests(conn, caller, flt):
            values = list(row)
            values[1] = isoformat_z(row.requested_at)
            yield values

    name = f"activity-log-{utcnow().strftime('%Y%m%dT%H%M%SZ')}.csv"
    return csv_download(portal.request, name, service.EXPORT_HEADER, rows)


@router.post("/columns")
async def save_activity_columns(portal: OperatorOrReseller) -> Response:
    """Keeps the chosen columns for the person (preferences, ``activity.columns``)."""
    form = await read_form(portal.request)
    chosen = form.lists.get("columns", [])
    known = {key for key, _label in COLUMNS}
    if any(key not in known for key in chosen):
        form.refuse({FORM: "An unknown column was chosen."})
    elif not chosen:
        form.refuse({FORM: "Choose at least one column."})
    query = form.get("query")
    if "\x00" in query:
        form.refuse({FORM: UNSTORABLE})
        query = ""
    back = urlencode(parse_qsl(query, keep_blank_values=False))
    if not form.ok:
        portal.request.scope["query_string"] = back.encode()
        return await _list_page(portal, columns_form=form, status=400)
    ordered = [key for key, _label in COLUMNS if key in chosen]
    await preferences.put(portal.db, portal.user.principal, COLUMNS_PREFERENCE, ordered)
    return see_other(f"{PREFIX}/activity" + (f"?{back}" if back else ""))


def _entry_id(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= INT64_MAX:
        raise NotFound("Request not found.")
    return int(text)


@router.get("/{entry_id}")
async def activity_record(portal: OperatorOrReseller, entry_id: str) -> Response:
    """One logged request: visible exactly when the list shows it (another tenant's id,
    or none, is the 404 page)."""
    record: ActivityLogRecord = await service.get_request(
        portal.db, portal.caller, _entry_id(entry_id)
    )
    back = portal.request.headers.get("referer", "")
    back_path = f"{PREFIX}/activity"
    if back.startswith(str(portal.request.base_url).rstrip("/") + back_path + "?"):
        back_path += back[back.index("?") :]
    return portal.page(
        f"Request {record.id}",
        "activity/record.html",
        record=record,
        back=back_path,
        portal_request=record.path.startswith(PREFIX + "/") and record.token == 0,
    )
