"""The Events section (docs/portal.md, "Events"): the AMQP and webhook subscriptions of
the accounts the person may see, with their delivery health and a "retry now"
(events/health.py), and the user-action feed with the API's filters
(cloud/user_actions, the service of GET /cloud/v1/user_actions).

Secrets are never rendered: an AMQP connection string's password and a webhook's
header value are masked as the API answers them.
"""

from __future__ import annotations

from typing import Any, get_args
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.cloud.user_actions import service as user_actions
from cloudadmin.cloud.user_actions.schemas import ActionType, ApiGroup
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound
from cloudadmin.events import health
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.kit.pagination import page_links
from cloudadmin.portal.context import PREFIX, OperatorOrReseller, PortalRoute, see_other
from cloudadmin.portal.sections.events_filters import (
    PAGE_ROWS,
    next_retry,
    offset_of,
    read_actions,
    read_subscription_filters,
    span,
)
from cloudadmin.web.app_state import app_state

router = APIRouter(prefix=f"{PREFIX}/events", route_class=PortalRoute, include_in_schema=False)

SUBSCRIPTION_ROWS = 50
KINDS = (("amqp", "AMQP subscriptions"), ("webhook", "Webhook subscriptions"))


def _with(query: str, **changes: str | int | None) -> str:
    """The page's query string with ``changes`` (None removes a parameter)."""
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=False) if k not in changes]
    kept += [(k, str(v)) for k, v in changes.items() if v not in (None, "", 0)]
    return urlencode(kept)


@router.get("")
async def events_index(portal: OperatorOrReseller) -> Response:
    request = portal.request
    query = request.url.query
    form, client_id, failing_only = read_subscription_filters(request.query_params)
    now = utcnow()
    box = app_state(request.app).secret_box
    tables = []
    for kind, title in KINDS:
        offset = offset_of(form, f"{kind}_offset")
        listed = await health.subscriptions_health(
            portal.db,
            portal.caller,
            box,
            kind,
            limit=SUBSCRIPTION_ROWS,
            offset=offset,
            client_id=client_id,
            failing_only=failing_only,
        )
        previous = nxt = None
        if offset > 0:
            previous = "?" + _with(query, **{f"{kind}_offset": max(offset - SUBSCRIPTION_ROWS, 0)})
        if offset + SUBSCRIPTION_ROWS < listed.count:
            nxt = "?" + _with(query, **{f"{kind}_offset": offset + SUBSCRIPTION_ROWS})
        rows = [
            {
                "item": item,
                "oldest": None
                if item.oldest_pending_at is None
                else span(item.oldest_pending_seconds(now) or 0),
                "next_retry": next_retry(item.next_attempt_at, now),
                "waiting": item.next_attempt_at is not None and item.next_attempt_at > now,
            }
            for item in listed.items
        ]
        tables.append(
            {
                "kind": kind,
                "title": title,
                "count": listed.count,
                "rows": rows,
                "pages": (previous, nxt),
            }
        )
    retried = _retried(request.query_params.get("retried", ""))
    return portal.page_or_part(
        "Events",
        "events/index.html",
        "events/health.html",
        status=400 if form.errors else 200,
        form=form,
        tables=tables,
        retried=retried,
        query=query,
    )


def _retried(text: str) -> str | None:
    """The notice after "retry now" (its redirect names the subscription)."""
    kind, _, sid = text.partition("-")
    names = {"amqp": "AMQP", "webhook": "webhook"}
    if kind not in names or not (sid.isascii() and sid.isdigit()):
        return None
    return (
        f"The {names[kind]} subscription {int(sid)} is tried again now: its backoff "
        "ended and the dispatcher was woken."
    )


def _subscription_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= INT32_MAX:
        raise NotFound("Subscription not found.")
    return int(text)


@router.post("/{kind}/{subscription_id}/retry")
async def retry_subscription_now(
    portal: OperatorOrReseller, kind: str, subscription_id: str
) -> Response:
    """Ends the subscription's backoff and wakes the dispatcher (events/health.py)."""
    sid = _subscription_id(subscription_id)
    await health.retry_now(portal.db, portal.caller, kind, sid)
    return see_other(f"{PREFIX}/events?" + urlencode({"retried": f"{kind}-{sid}"}))


@router.get("/actions")
async def user_actions_index(portal: OperatorOrReseller) -> Response:
    request = portal.request
    form, flt, offset = read_actions(request.query_params)
    listed = None
    links: tuple[str | None, str | None] = (None, None)
    if flt is not None:
        listed = await user_actions.list_(
            portal.db,
            portal.caller,
            flt.log_filter(),
            order=flt.order_by,
            limit=PAGE_ROWS,
            offset=offset,
        )
        nxt, previous = page_links(request.url, count=listed.count, limit=PAGE_ROWS, offset=offset)
        links = (previous, nxt)
    values: dict[str, Any] = dict(
        form=form,
        listed=listed,
        links=links,
        offset=offset,
        limit=PAGE_ROWS,
        action_types=[("", "Any")] + [(v, v) for v in get_args(ActionType)],
        api_groups=[("", "Any")] + [(v, v) for v in sorted(get_args(ApiGroup))],
        orders=[("desc", "Newest first"), ("asc", "Oldest first")],
    )
    response = portal.page_or_part(
        "User actions",
        "events/actions.html",
        "events/actions_results.html",
        status=400 if flt is None else 200,
        **values,
    )
    if portal.is_htmx and flt is None:
        response.headers["HX-Redirect"] = str(request.url)
    return response
