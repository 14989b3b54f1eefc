"""Wire shapes of tasks: the provider's ``TaskSerializer``, ``TaskIDsSerializer`` and the
list's envelope."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

TaskState = Literal["ERROR", "FINISHED", "NEW", "RUNNING"]
TaskOrderBy = Literal["asc", "desc"]
TaskDetailedState = Literal[
    "CLUSTER_CLEAN_UP", "CLUSTER_REBUILD", "CLUSTER_RESIZE", "CLUSTER_RESUME",
    "CLUSTER_SERVER_REBUILD", "CLUSTER_SUSPEND", "ERROR", "FINISHED", "IPU_SERVERS",
    "NETWORK", "POPLAR_SERVERS", "POST_DEPLOY_SETUP", "VIPU_CONTROLLER",
]  # fmt: skip


def _time(description: str) -> Any:
    return Field(description=description, json_schema_extra={"format": "date-time"})


class Task(BaseModel):
    """Every field is always present; nullable ones are null when they do not apply."""

    id: str = Field(description="The task ID")
    task_type: str = Field(description="The task type (`patch_lblistener`)")
    state: TaskState = Field(description="The task state")
    user_id: int = Field(description="The user ID that initiated the task")
    client_id: int | None = Field(description="The account the task's resource belongs to")
    user_client_id: int | None = Field(description="The account of the user who started it")
    project_id: int | None = Field(description="The project ID")
    region_id: int | None = Field(description="The region ID")
    created_on: str | None = _time("Created timestamp")
    updated_on: str | None = _time("Last updated timestamp")
    finished_on: str | None = _time("Finished timestamp (FINISHED or ERROR)")
    acknowledged_at: str | None = _time("When the task was acknowledged")
    acknowledged_by: int | None = Field(description="The user who acknowledged it")
    created_resources: dict[str, list[str | int]] | None = Field(
        description="The IDs of the resources the task created, by kind; null for a task "
        "that creates none (a listener change)."
    )
    data: dict[str, Any] | None = Field(
        description="Task parameters: the change asked for; secrets are replaced by `***`."
    )
    detailed_state: TaskDetailedState | None = Field(
        description="Always null: no task here has detailed states."
    )
    error: str | None = Field(description="Why the task ended in ERROR; null otherwise.")
    job_id: str | None = Field(description="Always null.")
    lifecycle_policy_id: int | None = Field(description="Always null.")
    schedule_id: str | None = Field(description="Always null.")
    request_id: str | None = Field(
        description="The request that started the task (its X-Request-ID)."
    )


class TaskList(BaseModel):
    count: int = Field(ge=0)
    results: list[Task]


class TaskIds(BaseModel):
    tasks: list[str] = Field(
        description="The task IDs of the change: poll `GET /cloud/v1/tasks/{task_id}` until "
        "the task is FINISHED or ERROR."
    )
