"""Builds the activity log row of one request, secrets redacted, every text storable
(activity-log.md, "What is stored of hostile input"), and writes it: a change's row in
the change's transaction; on PostgreSQL, a read's row with the other reads' rows of the
same few milliseconds, in one transaction (activity-log.md, "Durability")."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from sqlalchemy import bindparam, insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from starlette.datastructures import UploadFile
from starlette.requests import Request

from cloudadmin.db import dialect, driver
from cloudadmin.db.base import table_of
from cloudadmin.db.engine import is_autocommit
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.kit.body import flattened
from cloudadmin.kit.redact import redact, redact_query
from cloudadmin.kit.storable import json_escape_surrogates, storable
from cloudadmin.web.app_state import app_state
from cloudadmin.web.request_log import LoggedRequest

log = logging.getLogger("cloudadmin.activity_log")

# The longest ``data`` and ``query_params`` stored; longer ones are cut.
MAX_DATA_CHARS = 65_536
# Reads' rows held while the database does not take them (they are written once it
# does); past this many the oldest are dropped, each drop logged as an error.
MAX_WAITING_ROWS = 100_000
# After a failed write of the reads' rows, the next try.
RETRY_SECONDS = 1.0


async def _body_text(request: Request) -> str:
    form = getattr(request, "_form", None)
    if form is not None:  # multipart: describe the parts, never store file bytes
        parts: dict[str, Any] = {}
        repeated: dict[str, list[Any]] = {}
        for name, value in form.multi_items():
            described: Any = value
            if isinstance(value, UploadFile):
                described = {
                    "filename": value.filename,
                    "content_type": value.content_type,
                    "size": value.size,
                }
            if name not in parts:
                parts[name] = described
            else:  # a field sent more than once (a form's checkboxes): every value, in order
                parts[name] = repeated.setdefault(name, [parts[name]])
                parts[name].append(described)
        return _json_text(parts)
    raw = getattr(request, "_body", None)  # only what the handler read; never read here
    if not raw:
        return ""
    # A body nested too deep was refused (web/text_guard.py); what is logged of it is
    # the body with every part deeper than the limit replaced by a note, so that
    # nothing here goes down it level by level.
    depth = app_state(request.app).settings.max_json_depth
    note = json.dumps(f"<nested deeper than {depth} levels>").encode()
    try:
        decoded = json.loads(flattened(raw, depth, note))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return f"<unparsable body of {len(raw)} bytes>"
    return _json_text(decoded)


def _json_text(value: Any) -> str:
    """The value as JSON text, secrets masked, cut to MAX_DATA_CHARS: only what is kept
    is masked (kit/redact.py), so a body of any size costs at most that much masking."""
    redacted = redact(value, max_chars=MAX_DATA_CHARS)
    # NUL comes out of json.dumps as the escape \u0000, a lone surrogate as itself.
    return json_escape_surrogates(json.dumps(redacted, ensure_ascii=False))[:MAX_DATA_CHARS]


def _query_text(request: Request) -> str:
    # The raw bytes, not request.url: a query string need not be UTF-8. Capped as the
    # body is, after masking: a secret cut in half is still masked.
    query = request.scope.get("query_string", b"").decode("utf-8", "replace")
    return storable(redact_query(query))[:MAX_DATA_CHARS]


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
_ON_ITS_OWN = {
    name: dialect.insert_without_flush_wait(name, _TABLE, _VALUES)
    for name in ("postgresql", "sqlite")
}
_INSERT_ON_ITS_OWN = {name: driver.Static(stmt) for name, stmt in _ON_ITS_OWN.items()}


async def write_entry(conn: AsyncConnection, values: dict[str, Any]) -> None:
    """One INSERT in the connection's transaction (a read's: on its own, on the driver
    connection; db/driver.py)."""
    stmt = _INSERT_ON_ITS_OWN.get(conn.dialect.name, _INSERT) if is_autocommit(conn) else _INSERT
    await driver.fetch(conn, stmt, values)


class RequestRecorder:
    """ApiRoute's request log (web/request_log.py's RequestLog), one per application.

    A change's row is written in the change's transaction, as it is built. On PostgreSQL,
    with ``batch_seconds`` > 0, a read's row waits in this process for at most that long
    and is then written with every other read row waiting, in one transaction on a pooled
    connection of its own: a read pays no INSERT and commit of its own (about a tenth of
    the database's CPU on a selective list request; docs/performance.md, "The list's
    request path"). The rows of
    one process wait only for that process; nothing is shared between processes.
    """

    def __init__(self, read_engine: AsyncEngine, batch_seconds: float) -> None:
        self._engine = read_engine
        postgres = read_engine.dialect.name == "postgresql"
        self._batch_seconds = batch_seconds if postgres else 0.0
        self._waiting: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None

    async def __call__(self, conn: AsyncConnection, logged: LoggedRequest) -> None:
        values = await build_entry(logged)
        if not (self._batch_seconds and is_autocommit(conn)):
            await write_entry(conn, values)
            return
        if len(self._waiting) >= MAX_WAITING_ROWS:
            del self._waiting[0]
            log.error("activity log: a read's row was dropped (%d rows wait)", MAX_WAITING_ROWS)
        self._waiting.append(values)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_later())

    async def write_waiting(self, conn: AsyncConnection) -> None:
        """Writes the reads' rows waiting now, on ``conn`` (a read's: no transaction of its
        own), in one transaction; on failure they wait again."""
        rows, self._waiting = self._waiting, []
        if not rows:
            return
        stmt = _ON_ITS_OWN[conn.dialect.name]
        try:
            # executemany: asyncpg sends the rows in one pipelined, atomic batch.
            await conn.execute(stmt, rows)
        except BaseException:
            self._waiting[:0] = rows[-MAX_WAITING_ROWS:]
            raise

    async def _write_later(self) -> None:
        delay = self._batch_seconds
        while True:
            await asyncio.sleep(delay)
            try:
                async with self._engine.connect() as conn:
                    await self.write_waiting(conn)
            except Exception:
                log.exception(
                    "activity log: %d rows of reads could not be written; next try in %ss",
                    len(self._waiting),
                    RETRY_SECONDS,
                )
                delay = RETRY_SECONDS
                continue
            if not self._waiting:
                self._writer = None
                return
            delay = self._batch_seconds

    async def close(self) -> None:
        """At shutdown: the rows still waiting are written now."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
        if not self._waiting:
            return
        try:
            async with self._engine.connect() as conn:
                await self.write_waiting(conn)
        except Exception:
            log.exception("activity log: %d rows of reads were lost", len(self._waiting))
