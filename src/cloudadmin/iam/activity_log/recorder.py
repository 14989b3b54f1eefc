"""Builds the activity log row of one request, secrets redacted."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from sqlalchemy import bindparam, insert
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import UploadFile
from starlette.requests import Request

from cloudadmin.auth.caller import Caller
from cloudadmin.db import driver
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.kit.redact import MASK, SECRET_KEY_NAMES, redact

MAX_DATA_CHARS = 65_536


async def _body_text(request: Request) -> str:
    form = getattr(request, "_form", None)
    if form is not None:  # multipart: describe the parts, never store file bytes
        parts: dict[str, Any] = {}
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                parts[name] = {"filename": value.filename, "content_type": value.content_type,
                               "size": value.size}
            else:
                parts[name] = value
        return json.dumps(redact(parts), ensure_ascii=False)
    raw = getattr(request, "_body", None)  # only what the handler read; never read here
    if not raw:
        return ""
    try:
        decoded = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return f"<unparsable body of {len(raw)} bytes>"
    return json.dumps(redact(decoded), ensure_ascii=False)[:MAX_DATA_CHARS]


def _query_text(request: Request) -> str:
    query = request.url.query
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(SECRET_KEY_NAMES.search(k) for k, _ in pairs):
        return query
    return urlencode([(k, MASK if SECRET_KEY_NAMES.search(k) else v) for k, v in pairs])


async def build_entry(
    request: Request,
    caller: Caller,
    action: str,
    requested_at: datetime,
    status_code: int,
    *,
    reverted: bool,
) -> dict[str, Any]:
    """The column values of the request's log row."""
    return dict(
        actions=action,
        data=await _body_text(request),
        user_email=caller.user_email,
        client_id=caller.account_id,
        token_id=caller.key_id,
        user_id=caller.user_id,
        requested_at=requested_at,
        path=request.url.path[:2048],
        remote_ip_address=request.client.host if request.client else "",
        host=request.headers.get("host", "")[:255],
        method=request.method,
        query_params=_query_text(request),
        status_code=status_code,
        reverted=reverted,
        request_id=str(getattr(request.state, "request_id", "")),
    )


_TABLE: Any = ActivityLogEntry.__table__
# Core, not ORM: this runs on every request. Every column but the id is a named bind
# parameter, so the statement compiles once whatever build_entry gives.
_INSERT = driver.Static(insert(_TABLE).values({c.name: bindparam(c.name, type_=c.type)
                                               for c in _TABLE.columns if c.name != "id"}))


async def write_entry(conn: AsyncConnection, values: dict[str, Any]) -> None:
    """One INSERT in the connection's transaction (a read's: on its own, on the driver
    connection; db/driver.py)."""
    await driver.fetch(conn, _INSERT, values)
