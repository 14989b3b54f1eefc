"""The user-action record of the real API (``UserActionSerializer``) and its filters.

The record is also the body of every AMQP message (docs/events.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

# The real API's action types, and ours beyond them ("upload": branding files).
ActionType = Literal[
    "activate", "attach", "change_logging_resources", "create", "create_access_rule",
    "deactivate", "delete", "delete_access_rule", "delete_metadata", "detach",
    "disable_logging", "disable_portsecurity", "download", "enable_logging",
    "enable_portsecurity", "failover", "put_into_servergroup", "reboot", "reboot_hard",
    "rebuild", "regenerate_credentials", "remove_from_servergroup", "replace_metadata",
    "resize", "resume", "retype", "revert", "scale_down", "scale_up", "start", "stop",
    "suspend", "update", "update_metadata", "upgrade",
    "upload",
]  # fmt: skip

# The real API's groups, and this service's own families (IAM and subscriptions).
ApiGroup = Literal[
    "ai_cluster", "caas_container", "caas_key", "caas_pull_secret", "dbaas_postgres",
    "ddos_profile", "faas_function", "faas_key", "faas_namespace", "file_shares",
    "floating_ip", "image", "inference_at_the_edge", "instance", "instance_isolation",
    "k8s_cluster", "k8s_cluster_template", "k8s_pool", "laas", "laas_topic",
    "lb_health_monitor", "lb_l7policy", "lb_l7rule", "lblistener", "lbpool",
    "lbpool_member", "lifecycle_policy", "lifecycle_policy_volume_member", "loadbalancer",
    "network", "port", "project", "quota_limit_request", "registry", "reservation",
    "reserved_fixed_ip", "role", "router", "secret", "securitygroup", "securitygrouprule",
    "servergroup", "shared_flavor", "shared_image", "shared_network", "snapshot",
    "snapshot_schedule", "ssh_key", "subnet", "user", "vip_ip_addresses", "volume",
    "amqp_subscription", "branding", "client", "client_user", "notification_settings",
    "seller",
]  # fmt: skip

OrderBy = Literal["asc", "desc"]

_OPTIONAL_RESOURCE_FIELDS = ("resource_body", "search_field")


class UserActionResource(BaseModel):
    resource_id: str = Field(description="Resource ID")
    resource_type: str = Field(description="Resource type")
    resource_body: dict[str, Any] | None = Field(
        default=None, description="Free-form object, resource body (never set here)."
    )
    search_field: str | None = Field(
        default=None,
        description="The resource's often-searched property (a listener's name); the "
        "`search_field` filter matches it.",
    )

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Optional fields without a value are left out, as they are in the message.
        out: dict[str, Any] = handler(self)
        for name in _OPTIONAL_RESOURCE_FIELDS:
            if out.get(name) is None:
                out.pop(name, None)
        return out


class UserActionPrice(BaseModel):
    currency_code: str | None
    price_per_hour: float | None
    price_per_month: float | None
    price_status: Literal["error", "hide", "show"]


class UserAction(BaseModel):
    """Every field is always present; nullable ones are null when they do not apply."""

    id: str = Field(description="User action ID")
    timestamp: str = Field(
        description="Action timestamp, RFC 3339 UTC", json_schema_extra={"format": "date-time"}
    )
    client_id: int | None = Field(description="The account the action concerns.")
    user_id: int = Field(description="The user who acted.")
    email: str | None = Field(
        description="The user's e-mail address", json_schema_extra={"format": "email"}
    )
    project_id: int | None
    region_id: int | None
    api_group: str = Field(description="API group (see docs/cloud.md for this service's).")
    action_type: str = Field(description="Action type")
    action_data: dict[str, Any] | None = Field(
        description="The fields the request changed; secrets are replaced by `***`."
    )
    task_id: str | None = Field(
        description="The task that makes the change (a listener's v2 PATCH); null for an "
        "action complete within its request."
    )
    user_agent: str | None
    source_user_ip: str | None
    acknowledged: bool = Field(
        description="Every subscription owed the record has received it (false when the "
        "account had no subscription)."
    )
    is_complete: bool = Field(description="Always true: records are written whole.")
    total_price: UserActionPrice | None = Field(description="Always null: nothing is priced.")
    token_id: int | None = Field(description="The API key used.")
    issued_by_user_id: int | None = Field(description="The user the API key was issued to.")
    resources: list[UserActionResource]
    request_id: str = Field(
        description="This service's request id (also in the activity log and X-Request-ID)."
    )


class UserActionList(BaseModel):
    count: int = Field(ge=0)
    results: list[UserAction]
