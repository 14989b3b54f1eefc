"""Wire shape of a snapshot lifecycle policy; schedules are discriminated by ``type``."""

from __future__ import annotations

from typing import Annotated, Literal

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


class CronSchedule(_ScheduleCommon):
    type: Literal["cron"]
    minute: str = Field(description="0-59, '*' or a comma-separated list.")
    hour: str = Field(description="0-23, '*' or a comma-separated list.")
    day: str = Field(description="Day of the month 1-31, '*' or a comma-separated list.")
    month: str = Field(description="1-12, '*' or a comma-separated list.")
    week: str = Field(description="ISO week 1-53, '*' or a comma-separated list.")
    day_of_week: str = Field(description="mon..sun, '*' or a comma-separated list.")
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
