"""Builds the activity log row of one request, secrets redacted, every text storable
(activity-log.md, "What is stored of hostile input")."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, insert
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import UploadFile
from starlette.requests import Request

from cloudadmin.db import dialect, driver
from cloudadmin.db.base import table_of
from cloudadmin.db.engine import is_autocommit
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.kit.redact import redact, redact_query
from cloudadmin.kit.storable import json_escape_surrogates, storable
from cloudadmin.web.request_log import LoggedRequest

MAX_DATA_CHARS = 65_536


async def _body_text(request: Request) -> str:
    form = getattr(request, "_form", None)
    if form is not None:  # multipart: describe the parts, never store file bytes
        parts: dict[str, Any] = {}
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                parts[name] = {
                    "filename": value.filename,
                    "content_type": value.content_type,
                    "size": value.size,
                }
            else:
                parts[name] = value
        return _json_text(parts)
    raw = getattr(request, "_body", None)  # only what the handler read; never read here
    if not raw:
        return ""
    try:
        decoded = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return f"<unparsable body of {len(raw)} bytes>"
    return _json_text(decoded)[:MAX_DATA_CHARS]


def _json_text(value: Any) -> str:
    # NUL comes out of json.dumps as the escape \u0000, a lone surrogate as itself.
    return json_escape_surrogates(json.dumps(redact(value), ensure_ascii=False))


def _query_text(request: Request) -> str:
    # The raw bytes, not request.url: a query string need not be UTF-8.
    query = request.scope.get("query_string", b"").decode("utf-8", "replace")
    return storable(redact_query(query))


async def build_entry(logged: LoggedRequest) -> dict[str, Any]:
    """The column values of the request's log row."""
    request, caller = logged.request, logged.caller
    return dict(
        actions=logged.action,
        data=await _body_text(request),
        user_email=caller.user_email,
        client_id=caller.account_id,
        token_id=caller.key_id,
        user_id=caller.user_id,
        requested_at=logged.requested_at,
        path=storable(request.scope["path"])[:2048],
        remote_ip_address=storable(request.client.host if request.client else "")[:45],
        host=storable(request.headers.get("host", ""))[:255],
        method=request.method,
        query_params=_query_text(request),
        status_code=logged.status_code,
        reverted=logged.reverted,
        request_id=str(getattr(request.state, "request_id", "")),
    )


_TABLE = table_of(ActivityLogEntry)
# Core, not ORM: this runs on every request. Every column but the id is a named bind
# parameter, so the statement compiles once whatever build_entry gives.
_VALUES = {c.name: bindparam(c.name, type_=c.type) for c in _TABLE.columns if c.name != "id"}
# In a change's transaction: committed (and flushed) with the change.
_INSERT = driver.Static(insert(_TABLE).values(_VALUES))
# A read's row is a transaction of its own: committed without waiting for the flush
# (docs/activity-log.md, "Durability"). Waiting cost a read 1 to 6 ms of latency on this
# project's benchmark machine, more than the rest of a selective list request.
_INSERT_ON_ITS_OWN = {
    name: driver.Static(dialect.insert_without_flush_wait(name, _TABLE, _VALUES))
    for name in ("postgresql", "sqlite")
}


async def write_entry(conn: AsyncConnection, values: dict[str, Any]) -> None:
    """One INSERT in the connection's transaction (a read's: on its own, on the driver
    connection; db/driver.py)."""
    stmt = _INSERT_ON_ITS_OWN.get(conn.dialect.name, _INSERT) if is_autocommit(conn) else _INSERT
    await driver.fetch(conn, stmt, values)


async def record(conn: AsyncConnection, logged: LoggedRequest) -> None:
    """The request's log row, written (web/request_log.py's RequestLog: ApiRoute calls it
    as ``AppState.request_log``)."""
    await write_entry(conn, await build_entry(logged))
