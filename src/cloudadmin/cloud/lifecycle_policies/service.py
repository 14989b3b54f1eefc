"""Lifecycle policies: any user of the owning account reads (docs/access.md)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.cloud import scoping
from cloudadmin.cloud.lifecycle_policies import repository
from cloudadmin.cloud.lifecycle_policies.schemas import (
    CronSchedule,
    IntervalSchedule,
    LifecyclePolicy,
    LifecyclePolicyList,
    PolicyVolume,
    RetentionTime,
)
from cloudadmin.cloud.scoping import RegionPath
from cloudadmin.db.models import LifecyclePolicy as PolicyRow
from cloudadmin.errors import NotFound
from cloudadmin.kit.from_row import from_row
from cloudadmin.kit.pagination import Paging

# Stored schedules keep only what was written; absent fields read as these.
_CRON_DEFAULTS = {
    "minute": "*", "hour": "*", "day": "*", "month": "*", "week": "*", "day_of_week": "*",
    "timezone": "UTC",
}  # fmt: skip
_INTERVAL_FIELDS = ("weeks", "days", "hours", "minutes")


def _retention(raw: Any) -> RetentionTime | None:
    if not isinstance(raw, dict):
        return None
    return RetentionTime(**{k: int(raw.get(k) or 0) for k in ("days", "hours", "minutes", "weeks")})


def _schedule(raw: dict[str, Any], policy: PolicyRow) -> CronSchedule | IntervalSchedule:
    common: dict[str, Any] = {
        "id": str(raw.get("id") or ""),
        "max_quantity": int(raw.get("max_quantity") or 0),
        "owner": raw.get("owner") or "lifecycle_policy",
        "owner_id": int(raw.get("owner_id") or policy.id),
        "retention_time": _retention(raw.get("retention_time")),
        "resource_name_template": raw.get("resource_name_template"),
        "user_id": int(raw.get("user_id") or policy.user_id),
    }
    if raw.get("type") == "interval":
        times = {k: int(raw.get(k) or 0) for k in _INTERVAL_FIELDS}
        return IntervalSchedule(type="interval", **common, **times)
    cron = {k: str(raw[k]) if raw.get(k) is not None else v for k, v in _CRON_DEFAULTS.items()}
    return CronSchedule(type="cron", **common, **cron)


def _out(row: PolicyRow, *, need_volumes: bool) -> LifecyclePolicy:
    return from_row(
        LifecyclePolicy,
        row,
        schedules=[_schedule(s, row) for s in row.schedules or []],
        volumes=[PolicyVolume(**v) for v in row.volumes or []] if need_volumes else [],
    )


async def get(
    session: AsyncSession,
    caller: Caller,
    at: RegionPath,
    policy_id: int,
    *,
    need_volumes: bool,
) -> LifecyclePolicy:
    project = await scoping.visible_project(session, caller, at.project_id)
    row = await repository.get_in(session, project.id, at.region_id, policy_id)
    if row is None:
        raise NotFound("Lifecycle policy not found.")
    return _out(row, need_volumes=need_volumes)


async def list_(
    session: AsyncSession,
    caller: Caller,
    at: RegionPath,
    page: Paging,
    *,
    need_volumes: bool,
) -> LifecyclePolicyList:
    project = await scoping.visible_project(session, caller, at.project_id)
    count, rows = await repository.list_in(session, project.id, at.region_id, page)
    return LifecyclePolicyList(
        count=count, results=[_out(r, need_volumes=need_volumes) for r in rows]
    )
