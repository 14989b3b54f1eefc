"""Activity log listing and reading one entry, scoped per docs/access.md."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import ColumnElement, Row
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.errors import NotFound
from cloudadmin.iam.activity_log import repository
from cloudadmin.iam.activity_log.repository import LogFilter
from cloudadmin.iam.activity_log.schemas import ActivityLogPage, ActivityLogRecord
from cloudadmin.kit.from_row import from_row
from cloudadmin.kit.pagination import page_links
from cloudadmin.kit.timeparse import isoformat_z


def _scope(caller: Caller) -> list[ColumnElement[bool]]:
    """Operators see every account's log; everyone else the requests on their own
    account; client members only their own requests."""
    t = ActivityLogEntry
    if caller.is_operator:
        return []
    own = caller_scope(caller, t.client_id)
    return [own, t.user_id == caller.user_id] if caller.is_member else [own]


def _record(e: ActivityLogEntry) -> ActivityLogRecord:
    return from_row(
        ActivityLogRecord,
        e,
        client=e.client_id,
        token=e.token_id or 0,  # an entry that names no key (the column allows it)
        user=e.user_id,
        requested_at=isoformat_z(e.requested_at),
    )


async def list_requests(
    session: AsyncSession, caller: Caller, flt: LogFilter, *, limit: int, offset: int, url: URL
) -> ActivityLogPage:
    scope = _scope(caller)
    total = await repository.count(session, scope, flt)
    rows = await repository.page(session, scope, flt, limit=limit, offset=offset)
    nxt, prev = page_links(url, count=total, limit=limit, offset=offset)
    return ActivityLogPage(count=total, result=[_record(r) for r in rows], next=nxt, previous=prev)


async def get_request(session: AsyncSession, caller: Caller, entry_id: int) -> ActivityLogRecord:
    """One entry the caller would see in the list; any other id is 404."""
    entry = await repository.get(session, _scope(caller), entry_id)
    if entry is None:
        raise NotFound("Request not found.")
    return _record(entry)


# Rows an export reads at a time: its memory stays this many rows whatever it holds.
EXPORT_BATCH = 1_000
# The export's columns, as its header names them.
EXPORT_HEADER = tuple(c.key for c in repository.EXPORT_COLUMNS)


async def stream_requests(
    conn: AsyncConnection, caller: Caller, flt: LogFilter
) -> AsyncIterator[Row[Any]]:
    """Every entry the list would show the caller with ``flt``, newest first, read in
    batches of EXPORT_BATCH (by id, below the last one read), each a statement of its
    own: no cursor or transaction is held open for the whole export, and the rows in
    memory are one batch's. Columns: EXPORT_HEADER. Entries written while it runs are
    newer (ids grow) and left out: the export begins with the newest entry of its first
    batch."""
    scope = _scope(caller)
    before: int | None = None
    while True:
        rows = await repository.export_batch(conn, scope, flt, before=before, limit=EXPORT_BATCH)
        for row in rows:
            yield row
        if len(rows) < EXPORT_BATCH:
            return
        before = rows[-1].id
