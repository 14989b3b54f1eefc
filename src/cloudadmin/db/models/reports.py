"""Monthly reports: a month's addendums per account, product and plan, computed by a job
in the process that runs the dispatcher (docs/portal.md, "Monthly report")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, deferred, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import BigIntKey, Email, UTCDateTime, utcnow


class MonthlyReport(Base):
    """One requested report. ``scope_account_id`` is the reseller whose clients it
    covers, or None for an operator's (every account); only callers of the same scope
    see it. The job holds a lease (``lease_owner``, ``lease_until``) while it computes:
    past it, the next pass takes the report again (``attempts`` counts the takes) or,
    after the last attempt, marks it failed. ``content`` is the CSV, one line per
    account, product and plan: bounded by those, not by the addendums."""

    __tablename__ = "monthly_reports"
    __table_args__ = (
        # A scope's list, newest first.
        Index("ix_monthly_reports_scope_account_id_id", "scope_account_id", "id"),
        # The job's look for work.
        Index("ix_monthly_reports_status_lease_until", "status", "lease_until"),
    )

    id: Mapped[BigIntKey]
    # The first day of the month, "YYYY-MM".
    month: Mapped[str] = mapped_column(String(7))
    scope_account_id: Mapped[int | None] = mapped_column(
        Integer, fk("clients.id", ondelete="CASCADE")
    )
    requested_by_user_id: Mapped[int | None] = mapped_column(Integer)
    requested_by_email: Mapped[Email]
    # generating, ready or failed
    status: Mapped[str] = mapped_column(String(16))
    failure: Mapped[str | None] = mapped_column(Text)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    line_count: Mapped[int | None] = mapped_column(Integer)
    content: Mapped[str | None] = deferred(mapped_column(Text))
