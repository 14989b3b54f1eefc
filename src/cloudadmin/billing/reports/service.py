"""Monthly reports as the Admin Portal asks for them: request one for a month, list and
read the caller's scope's reports, download a ready one; and what the job computes.

A report belongs to its requester's scope: an operator's covers every account and is
seen by operators; a reseller's covers the reseller and its clients (the addendum list's
reseller scope, docs/access.md) and is seen by that reseller's users only. Another
scope's report is a 404, whatever its id.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import Session

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.reports import repository
from cloudadmin.billing.reports.repository import FAILED, GENERATING, READY
from cloudadmin.db.models import MonthlyReport
from cloudadmin.db.types import utcnow
from cloudadmin.errors import Conflict, NotFound, PermissionDenied, ValidationError

__all__ = ["FAILED", "GENERATING", "READY"]

HEADER = (
    "account_id",
    "company_name",
    "product_id",
    "product_name",
    "plan_id",
    "plan_name",
    "addendums",
    "active_days",
)
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_FIRST_YEAR = 2000
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Set on a session whose transaction requested a report: the jobs of this process are
# woken when it commits (runner.wake_local).
REQUESTED = "cloudadmin_report_requested"


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``YYYY-MM`` as the instants [first day 00:00 UTC, next month's first day)."""
    found = _MONTH.match(month.strip())
    if found is None:
        raise ValidationError.field("month", "A month as YYYY-MM, e.g. 2026-10.")
    year, number = int(found.group(1)), int(found.group(2))
    if not 1 <= number <= 12:
        raise ValidationError.field("month", "A month as YYYY-MM, e.g. 2026-10.")
    if year < _FIRST_YEAR:
        raise ValidationError.field("month", f"A month from {_FIRST_YEAR} on.")
    start = datetime(year, number, 1, tzinfo=UTC)
    end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    return start, end


def scope_of(caller: Caller) -> int | None:
    """The scope of the caller's reports: None for an operator (every account), the
    reseller's account for a reseller's user; anyone else has no reports."""
    if caller.is_operator:
        return None
    if caller.is_reseller:
        return caller.account_id
    raise PermissionDenied()


async def request_report(session: AsyncSession, caller: Caller, month: str) -> MonthlyReport:
    """A new report of ``month`` (YYYY-MM, one that has begun) in the caller's scope,
    Generating until the job has computed it."""
    scope = scope_of(caller)
    start, _ = month_bounds(month)
    if start > utcnow():
        raise ValidationError.field("month", "The month has not begun yet.")
    report = MonthlyReport(
        month=start.strftime("%Y-%m"),
        scope_account_id=scope,
        requested_by_user_id=caller.user_id,
        requested_by_email=caller.user_email,
        status=GENERATING,
        requested_at=utcnow(),
        attempts=0,
    )
    await repository.add(session, report)
    session.info[REQUESTED] = True
    return report


async def list_reports(
    session: AsyncSession, caller: Caller, *, limit: int, offset: int
) -> tuple[list[MonthlyReport], int]:
    """A page of the scope's reports, newest first, and how many there are."""
    scope = scope_of(caller)
    rows = await repository.listed(session, scope, limit=limit, offset=offset)
    return rows, await repository.counted(session, scope)


async def get_report(session: AsyncSession, caller: Caller, report_id: int) -> MonthlyReport:
    found = await repository.one(session, report_id, scope_of(caller))
    if found is None:
        raise NotFound("Report not found.")
    return found


async def report_csv(session: AsyncSession, caller: Caller, report_id: int) -> MonthlyReport:
    """The report with its CSV; a 409 while it is not ready."""
    found = await repository.one(session, report_id, scope_of(caller), content=True)
    if found is None:
        raise NotFound("Report not found.")
    if found.status != READY or found.content is None:
        raise Conflict("The report is not ready.")
    return found


def _cell(value: Any) -> Any:
    """A cell a spreadsheet would run as a formula is written with a leading apostrophe
    (as the portal's CSV downloads write it)."""
    if value is None:
        return ""
    if isinstance(value, int):
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def write_csv(rows: Sequence[Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for row in rows:
        writer.writerow([_cell(value) for value in row])
    return out.getvalue()


async def compute(
    conn: AsyncConnection, month: str, scope_account_id: int | None
) -> tuple[str, int]:
    """The report's CSV and its number of lines (without the header)."""
    start, end = month_bounds(month)
    rows = await repository.month_rows(conn, start, end, scope_account_id)
    return write_csv(rows), len(rows)


_wakers: set[Any] = set()


def on_request(callback: Any) -> Any:
    """Calls ``callback()`` after every commit of a transaction of this process that
    requested a report; returns the function that stops it."""
    _wakers.add(callback)
    return lambda: _wakers.discard(callback)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(REQUESTED, False):
        for callback in list(_wakers):
            callback()


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, _previous: Any) -> None:
    session.info.pop(REQUESTED, None)
