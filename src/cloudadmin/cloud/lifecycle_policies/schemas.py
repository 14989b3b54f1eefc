"""Wire shape of a snapshot lifecycle policy; schedules are discriminated by ``type``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class RetentionTime(BaseModel):
    """Time after which a snapshot made by the schedule is deleted."""

    days: int
    hours: int
    minutes: int
    weeks: int


class _ScheduleCommon(BaseModel):
    id: str
    max_quantity: int = Field(description="Number of snapshots kept.")
    owner: str
    owner_id: int
    retention_time: RetentionTime | None
    resource_name_template: str | None
    user_id: int


def _cron_field(values: str) -> Any:
    """A crontab-like field: ``values`` (a range, or names), '*' or a list of them."""
    return Field(description=f"{values}, '*' or a comma-separated list.")


class CronSchedule(_ScheduleCommon):
    type: Literal["cron"]
    minute: str = _cron_field("0-59")
    hour: str = _cron_field("0-23")
    day: str = _cron_field("Day of the month 1-31")
    month: str = _cron_field("1-12")
    week: str = _cron_field("ISO week 1-53")
    day_of_week: str = _cron_field("mon..sun")
    timezone: str = Field(description="IANA time zone; UTC unless set.")


class IntervalSchedule(_ScheduleCommon):
    type: Literal["interval"]
    weeks: int
    days: int
    hours: int
    minutes: int


Schedule = Annotated[CronSchedule | IntervalSchedule, Field(discriminator="type")]


class PolicyVolume(BaseModel):
    volume_id: str
    volume_name: str


class LifecyclePolicy(BaseModel):
    action: str = Field(description="What the policy does: volume_snapshot.")
    id: int
    name: str
    project_id: int
    region_id: int
    schedules: list[Schedule]
    status: Literal["active", "paused"]
    user_id: int = Field(description="The user who created the policy.")
    volumes: list[PolicyVolume] = Field(
        description="The volumes the policy snapshots; empty unless need_volumes=true."
    )


class LifecyclePolicyList(BaseModel):
    count: int = Field(ge=0)
    results: list[LifecyclePolicy]
