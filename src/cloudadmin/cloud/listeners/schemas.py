"""Wire shapes of load balancer listeners."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, Field, IPvAnyNetwork, StringConstraints

from cloudadmin.kit.body import LenientBody

# The real API's rule: 3-63 characters, letters/digits first, letters/digits/._ last.
NAME_PATTERN = r"^[a-zA-Z0-9][a-zA-Z 0-9._\-]{1,61}[a-zA-Z0-9._]$"
ListenerName = Annotated[str, StringConstraints(min_length=3, max_length=63, pattern=NAME_PATTERN)]

OperatingStatus = Literal["DEGRADED", "DRAINING", "ERROR", "NO_MONITOR", "OFFLINE", "ONLINE"]
Protocol = Literal["HTTP", "HTTPS", "PROMETHEUS", "TCP", "TERMINATED_HTTPS", "UDP"]
ProvisioningStatus = Literal[
    "ACTIVE", "DELETED", "ERROR", "PENDING_CREATE", "PENDING_DELETE", "PENDING_UPDATE"
]
TimeoutMs = Annotated[int, Field(ge=0, le=86_400_000)]


class ListenerRename(LenientBody):
    """Body of PATCH: the new name (required)."""

    name: ListenerName = Field(description="3-63 characters matching " + NAME_PATTERN)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class ListenerPatch(LenientBody):
    """Body of the v2 PATCH (the provider's ``PatchLbListenerSerializer``): the fields to
    change, each optional; a field left out keeps its value."""

    # Not nullable, and left out when not given (exclude_unset): no default to document.
    admin_state_up: bool = Field(  # type: ignore[assignment]  # None: not given
        default=None,
        description="Only true: listeners cannot be disabled here (false ends the task in ERROR).",
        json_schema_extra=_no_default,
    )
    allowed_cidrs: list[IPvAnyNetwork] | None = Field(
        default=None, max_length=100, description="Networks allowed to connect; null: any."
    )
    connection_limit: int = Field(  # type: ignore[assignment]  # None: not given
        default=None,
        ge=-1,
        le=1_000_000,
        description="Simultaneous connections; -1 is the default, 100000.",
        json_schema_extra=_no_default,
    )
    name: ListenerName = Field(  # type: ignore[assignment]  # None: not given
        default=None,
        description="3-63 characters matching " + NAME_PATTERN,
        json_schema_extra=_no_default,
    )
    secret_id: UUID | None = Field(
        default=None, description="PKCS12 secret (TERMINATED_HTTPS and PROMETHEUS listeners)."
    )
    sni_secret_id: list[UUID] | None = Field(
        default=None, description="SNI secrets (TERMINATED_HTTPS and PROMETHEUS listeners)."
    )
    timeout_client_data: TimeoutMs | None = None
    timeout_member_connect: TimeoutMs | None = Field(
        default=None, json_schema_extra={"deprecated": True}
    )
    timeout_member_data: TimeoutMs | None = Field(
        default=None, json_schema_extra={"deprecated": True}
    )
    user_list: list[ListenerUser] | None = Field(
        default=None, max_length=3, description="At most 3 users; null: none."
    )

    def changes(self) -> dict[str, Any]:
        """The fields given, as JSON values (the task's ``data``)."""
        return self.model_dump(mode="json", exclude_unset=True)


class ListenerStats(BaseModel):
    active_connections: int
    bytes_in: int
    bytes_out: int
    request_errors: int
    total_connections: int


class ListenerUser(BaseModel):
    encrypted_password: str
    username: str


class Listener(BaseModel):
    allowed_cidrs: list[str] | None
    admin_state_up: bool = Field(
        description="Always true: listeners cannot be disabled here (the real API's field, "
        "which its clients require)."
    )
    connection_limit: int = Field(ge=-1, le=1_000_000)
    creator_task_id: str | None
    id: str
    insert_headers: dict[str, Any]
    load_balancer_id: str | None
    name: str
    operating_status: OperatingStatus
    pool_count: int | None
    protocol: Protocol
    protocol_port: int = Field(ge=1, le=65535)
    provisioning_status: ProvisioningStatus
    secret_id: str | None
    sni_secret_id: list[str] | None
    stats: ListenerStats | None = Field(description="Null unless show_stats=true.")
    task_id: str | None = Field(
        description="Active task holding a lock on the listener; null when unlocked."
    )
    timeout_client_data: TimeoutMs | None
    timeout_member_connect: TimeoutMs | None = Field(json_schema_extra={"deprecated": True})
    timeout_member_data: TimeoutMs | None = Field(json_schema_extra={"deprecated": True})
    user_list: list[ListenerUser]


class ListenerList(BaseModel):
    count: int = Field(ge=0)
    results: list[Listener]
