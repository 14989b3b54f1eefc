"""The listener change a v2 PATCH starts (task type ``patch_lblistener``): what the task
runner applies, and the lock it releases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.cloud.listeners import repository
from cloudadmin.cloud.tasks.failure import TaskFailed
from cloudadmin.db.models import Listener, Task

TASK_TYPE = "patch_lblistener"

# What the provider's load balancer takes a certificate for.
_WITH_SECRETS = ("TERMINATED_HTTPS", "PROMETHEUS")
# The fields of the v2 PATCH body that are columns of the listener.
CHANGEABLE = (
    "allowed_cidrs", "connection_limit", "name", "secret_id", "sni_secret_id",
    "timeout_client_data", "timeout_member_connect", "timeout_member_data", "user_list",
)  # fmt: skip
# The provider's answer to connection_limit -1.
DEFAULT_CONNECTION_LIMIT = 100_000


def _refusal(row: Listener, data: dict[str, Any]) -> str | None:
    """Why the load balancer would refuse the change (the provider's task fails so)."""
    if data.get("admin_state_up") is False:
        return "Listeners cannot be disabled here: admin_state_up stays true."
    for field in ("secret_id", "sni_secret_id"):
        if data.get(field) and row.protocol not in _WITH_SECRETS:
            return (
                f"{field} applies only to TERMINATED_HTTPS and PROMETHEUS listeners; "
                f"this one is {row.protocol}."
            )
    return None


async def apply(session: AsyncSession, task: Task) -> dict[str, list[Any]] | None:
    data = dict(task.data or {})
    row = None
    if task.project_id is not None and task.region_id is not None and task.resource_id:
        row = await repository.get_in(session, task.project_id, task.region_id, task.resource_id)
    if row is None:
        raise TaskFailed(f"Listener {task.resource_id} no longer exists.")
    refusal = _refusal(row, data)
    if refusal is not None:
        raise TaskFailed(refusal)
    data = {field: data[field] for field in CHANGEABLE if field in data}  # admin_state_up: true
    if data.get("connection_limit") == -1:
        data["connection_limit"] = DEFAULT_CONNECTION_LIMIT
    if "user_list" in data and data["user_list"] is None:
        data["user_list"] = []
    for field, value in data.items():
        setattr(row, field, value)
    await session.flush()
    return None  # a change creates nothing


async def release(session: AsyncSession, task: Task) -> None:
    """Frees the listener, if this task still holds it."""
    await session.execute(
        update(Listener)
        .where(Listener.id == task.resource_id, Listener.task_id == task.id)
        .values(task_id=None)
        .execution_options(synchronize_session=False)
    )
