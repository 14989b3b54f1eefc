"""Cloud tasks: the asynchronous changes of the provider's API, and the lock they hold."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import JSONType, LongText, UTCDateTime, utcnow


class Task(Base):
    """One task, with the provider's ``TaskSerializer`` fields.

    No foreign keys: a task is a record of what was asked, kept after its account,
    project or resource is gone, as the provider keeps it. ``resource_id`` (the resource
    whose lock the task holds) and ``lease_expires_at`` (until when the process running
    it is trusted to finish it; past it, anyone settles it) are this service's own.
    """

    __tablename__ = "tasks"
    __table_args__ = (
        # The list: one account's tasks (or everyone's) in creation order.
        Index("ix_tasks_client_id_created_on_id", "client_id", "created_on", "id"),
        Index("ix_tasks_created_on_id", "created_on", "id"),
        # The sweep for tasks whose process died.
        Index("ix_tasks_state_lease_expires_at", "state", "lease_expires_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    task_type: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[int] = mapped_column(Integer)
    client_id: Mapped[int | None] = mapped_column(Integer)
    user_client_id: Mapped[int | None] = mapped_column(Integer)
    project_id: Mapped[int | None] = mapped_column(Integer)
    region_id: Mapped[int | None] = mapped_column(Integer)
    resource_id: Mapped[str | None] = mapped_column(String(36))
    data: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_resources: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    detailed_state: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[LongText | None]
    request_id: Mapped[str | None] = mapped_column(String(64))
    job_id: Mapped[str | None] = mapped_column(String(36))
    lifecycle_policy_id: Mapped[int | None] = mapped_column(Integer)
    schedule_id: Mapped[str | None] = mapped_column(String(36))
    created_on: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_on: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_on: Mapped[datetime | None] = mapped_column(UTCDateTime)
    acknowledged_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    acknowledged_by: Mapped[int | None] = mapped_column(Integer)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
