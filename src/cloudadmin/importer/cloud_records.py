"""The import document's records of the cloud domain (docs/import.md): projects,
regions, listeners, lifecycle policies and AMQP subscriptions; the other kinds are in
records.py, whose ``Record`` they share."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from cloudadmin.cloud.listeners.schemas import OperatingStatus, Protocol, ProvisioningStatus
from cloudadmin.importer.fields import Cidr, Id, Uuid
from cloudadmin.importer.records import (
    NestedError,
    PolicyStatus,
    Record,
    ScheduleType,
    Sealed,
    Text255,
    TimeoutMs,
)
from cloudadmin.kit.amqp_url import problems_of


class ProjectRecord(Record):
    id: Id
    client: Id
    name: Text255


class RegionRecord(Record):
    id: Id
    name: Text255


class Stats(Record):
    active_connections: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    request_errors: int = 0
    total_connections: int = 0


class ListUser(Record):
    encrypted_password: str
    username: str


_LISTENER_NAME = re.compile(r"^[^\x00-\x1f\x7f]*$")


class ListenerRecord(Record):
    id: Uuid
    project_id: Id
    region_id: Id
    name: Annotated[str, Field(min_length=1, max_length=63, pattern=_LISTENER_NAME.pattern)]
    connection_limit: Annotated[int, Field(ge=-1, le=1_000_000)] = -1
    load_balancer_id: Uuid | None
    operating_status: OperatingStatus
    protocol: Protocol
    protocol_port: Annotated[int, Field(ge=1, le=65535)]
    provisioning_status: ProvisioningStatus
    allowed_cidrs: list[Cidr] | None = None
    creator_task_id: Uuid | None = None
    insert_headers: dict[str, str] = {}
    pool_count: Annotated[int, Field(ge=0)] | None = 0
    secret_id: Text255 | None = None
    sni_secret_id: list[str] | None = None
    stats: Stats = Stats()
    task_id: Uuid | None = None
    timeout_client_data: TimeoutMs | None = None
    timeout_member_connect: TimeoutMs | None = None
    timeout_member_data: TimeoutMs | None = None
    user_list: list[ListUser] = []


class RetentionTime(Record):
    weeks: int | None = None
    days: int | None = None
    hours: int | None = None
    minutes: int | None = None


_CRON_ONLY = ("minute", "hour", "day", "month", "week", "day_of_week", "timezone")
_INTERVAL_ONLY = ("weeks", "days", "hours", "minutes")


class Schedule(Record):
    """Both variants in one model: ``type`` says which time fields it may carry."""

    type: ScheduleType
    id: str | None = None
    max_quantity: int | None = None
    owner: str | None = None
    owner_id: int | None = None
    user_id: int | None = None
    retention_time: RetentionTime | None = None
    resource_name_template: str | None = None
    # cron: crontab-like fields, strings as in the API ("*/2", "0,30", "mon")
    minute: str | None = None
    hour: str | None = None
    day: str | None = None
    month: str | None = None
    week: str | None = None
    day_of_week: str | None = None
    timezone: str | None = None
    # interval: how long between two snapshots
    weeks: Annotated[int, Field(ge=0)] | None = None
    days: Annotated[int, Field(ge=0)] | None = None
    hours: Annotated[int, Field(ge=0)] | None = None
    minutes: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> Schedule:
        foreign = _INTERVAL_ONLY if self.type == "cron" else _CRON_ONLY
        given = self.model_fields_set
        for name in foreign:
            if name in given:
                raise NestedError(name, f"not a field of a {self.type} schedule")
        return self


class Volume(Record):
    volume_id: str
    volume_name: str


class LifecyclePolicyRecord(Record):
    id: Id
    project_id: Id
    region_id: Id
    name: Text255
    status: PolicyStatus
    user_id: Id
    action: Annotated[str, Field(max_length=50)] = "volume_snapshot"
    schedules: list[Schedule] = []
    volumes: list[Volume] = []


class AmqpSubscriptionRecord(Record):
    id: Id
    client: Id
    connection_string: str | None = None  # its length too is checked by problems_of
    # The stored form (what `cloudadmin export` writes): encrypted, stored as it is.
    connection_string_encrypted: Sealed | None = None
    exchange: Text255 | None = None
    routing_key: Text255 | None = None
    receive_child_client_events: bool = False

    @model_validator(mode="after")
    def _one_form(self) -> AmqpSubscriptionRecord:
        if (self.connection_string is None) == (self.connection_string_encrypted is None):
            raise NestedError(
                "connection_string",
                "give connection_string or connection_string_encrypted (exactly one)",
            )
        return self

    @field_validator("connection_string")
    @classmethod
    def _shape(cls, value: str | None) -> str | None:
        if value is None:
            return value
        # The API's own parser: one reading of a connection string for both doors.
        found = problems_of(value)
        if found:
            raise PydanticCustomError("amqp", " ".join(found))
        return value
