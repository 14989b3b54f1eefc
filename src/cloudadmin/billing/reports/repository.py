"""The SQL of the monthly reports: the month's grouped query over the addendums, and the
job's claim, lease and end of a report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    and_,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import undefer

from cloudadmin.auth.scoping import tenant_clause
from cloudadmin.db.models import Addendum, Client, MonthlyReport
from cloudadmin.db.types import UTCDateTime

GENERATING = "generating"
READY = "ready"
FAILED = "failed"

# 1970-01-01 as a Julian day number (SQLite's julianday()).
_UNIX_EPOCH_JD = 2440587.5


def _floor_day(instant: ColumnElement[Any], dialect: str) -> ColumnElement[Any]:
    """The day (since 1970-01-01, UTC) ``instant`` falls on."""
    if dialect == "postgresql":
        return func.floor(func.extract("epoch", instant) / 86400)
    # julianday of the date alone is a whole number and a half: exact.
    return cast(func.julianday(func.date(instant)) - _UNIX_EPOCH_JD, Integer)


def _ceil_day(instant: ColumnElement[Any], dialect: str) -> ColumnElement[Any]:
    """The first day that begins at or after ``instant``."""
    if dialect == "postgresql":
        return func.ceil(func.extract("epoch", instant) / 86400)
    # Stored as text, 'YYYY-MM-DD HH:MM:SS.ffffff': later than the day's midnight when
    # any part of its time is not zero (a value written without the fraction compares
    # lower, as midnight itself does).
    midnight = func.date(instant).concat(" 00:00:00.000000")
    return _floor_day(instant, dialect) + case((instant > midnight, 1), else_=0)


def month_rows_statement(
    start: datetime, end: datetime, scope_account_id: int | None, dialect: str
) -> Any:
    """One grouped statement: per (account, product, plan), the addendums whose active
    range meets the month [start, end), and the sum of their active days in it: the
    calendar days (UTC) of the month on which the addendum was active at some moment (a
    range that begins before the month counts from its first day, one that ends after
    it, or never, to its last)."""
    a = Addendum
    month_start = literal(start, UTCDateTime())
    month_end = literal(end, UTCDateTime())
    first = case((a.active_start < month_start, month_start), else_=a.active_start)
    last = case(
        (or_(a.active_end.is_(None), a.active_end > month_end), month_end), else_=a.active_end
    )
    days = _ceil_day(last, dialect) - _floor_day(first, dialect)
    conditions: list[ColumnElement[bool]] = [
        a.active_start < month_end,
        or_(a.active_end.is_(None), a.active_end > month_start),
    ]
    if scope_account_id is not None:
        conditions.append(tenant_clause(scope_account_id, [a.reseller_id], clients=a.client_id))
    grouped = (
        select(
            a.client_id.label("client_id"),
            a.product_id.label("product_id"),
            func.max(a.product_name).label("product_name"),
            a.plan_id.label("plan_id"),
            func.max(a.plan_name).label("plan_name"),
            func.count().label("addendums"),
            cast(func.sum(days), BigInteger).label("active_days"),
        )
        .where(and_(*conditions))
        .group_by(a.client_id, a.product_id, a.plan_id)
        .subquery("grouped")
    )
    return (
        select(
            grouped.c.client_id,
            Client.company_name,
            grouped.c.product_id,
            grouped.c.product_name,
            grouped.c.plan_id,
            grouped.c.plan_name,
            grouped.c.addendums,
            grouped.c.active_days,
        )
        .select_from(grouped.outerjoin(Client, Client.id == grouped.c.client_id))
        .order_by(grouped.c.client_id, grouped.c.product_id, grouped.c.plan_id)
    )


async def month_rows(
    conn: AsyncConnection, start: datetime, end: datetime, scope_account_id: int | None
) -> Sequence[Any]:
    """The report's lines, in account, product and plan order."""
    stmt = month_rows_statement(start, end, scope_account_id, conn.dialect.name)
    return list((await conn.execute(stmt)).all())


def visible_to(scope_account_id: int | None) -> ColumnElement[bool]:
    """The reports of exactly this scope (None: the operators')."""
    column = MonthlyReport.scope_account_id
    return column.is_(None) if scope_account_id is None else column == scope_account_id


async def add(session: AsyncSession, report: MonthlyReport) -> MonthlyReport:
    session.add(report)
    await session.flush()
    return report


async def listed(
    session: AsyncSession, scope_account_id: int | None, *, limit: int, offset: int
) -> list[MonthlyReport]:
    stmt = (
        select(MonthlyReport)
        .where(visible_to(scope_account_id))
        .order_by(MonthlyReport.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return list((await session.execute(stmt)).scalars())


async def counted(session: AsyncSession, scope_account_id: int | None) -> int:
    stmt = select(func.count()).select_from(MonthlyReport).where(visible_to(scope_account_id))
    return int((await session.execute(stmt)).scalar_one())


async def one(
    session: AsyncSession, report_id: int, scope_account_id: int | None, *, content: bool = False
) -> MonthlyReport | None:
    stmt = select(MonthlyReport).where(MonthlyReport.id == report_id, visible_to(scope_account_id))
    if content:
        stmt = stmt.options(undefer(MonthlyReport.content))
    return (await session.execute(stmt)).scalar_one_or_none()


def _takeable(now: datetime) -> ColumnElement[bool]:
    return and_(
        MonthlyReport.status == GENERATING,
        or_(MonthlyReport.lease_until.is_(None), MonthlyReport.lease_until < now),
    )


async def next_takeable(conn: AsyncConnection, now: datetime) -> int | None:
    """The oldest report no job holds: new, or whose job's lease has passed."""
    stmt = select(MonthlyReport.id).where(_takeable(now)).order_by(MonthlyReport.id).limit(1)
    return (await conn.execute(stmt)).scalar_one_or_none()


async def claim(
    session: AsyncSession, report_id: int, owner: str, now: datetime, until: datetime
) -> int | None:
    """Takes the report for ``owner`` until ``until`` if no one holds it: the number of
    times it has been taken, this one included; None when another job took it first
    (one conditional UPDATE: two jobs never both take it)."""
    stmt = (
        update(MonthlyReport)
        .where(MonthlyReport.id == report_id, _takeable(now))
        .values(lease_owner=owner, lease_until=until, attempts=MonthlyReport.attempts + 1)
        .returning(MonthlyReport.attempts)
        .execution_options(synchronize_session=False)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a report ends: the columns :func:`end` writes besides its finish."""

    status: str
    content: str | None = None
    line_count: int | None = None
    failure: str | None = None


def ready(content: str, line_count: int) -> Outcome:
    return Outcome(READY, content=content, line_count=line_count)


def failed(reason: str) -> Outcome:
    return Outcome(FAILED, failure=reason)


def _held_by(report_id: int, owner: str) -> ColumnElement[bool]:
    """The report, while ``owner``'s lease on it stands (no other job took it since)."""
    return and_(
        MonthlyReport.id == report_id,
        MonthlyReport.status == GENERATING,
        MonthlyReport.lease_owner == owner,
    )


async def end(
    session: AsyncSession, report_id: int, owner: str, now: datetime, outcome: Outcome
) -> bool:
    """Ends the report (ready or failed) if ``owner`` still holds it; whether it did."""
    stmt = (
        update(MonthlyReport)
        .where(_held_by(report_id, owner))
        .values(**asdict(outcome), finished_at=now, lease_owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(stmt)
    return bool(getattr(result, "rowcount", 0))


async def one_by_id(session: AsyncSession, report_id: int) -> MonthlyReport | None:
    """The report, whatever its scope (the job's read)."""
    return await session.get(MonthlyReport, report_id)
