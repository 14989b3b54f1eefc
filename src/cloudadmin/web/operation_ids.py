"""Every operation's `operationId`: `<verb>_<resource>`, the method names of the provider's SDK.

Where the provider's Python SDK has the operation, the id is its resource and method
(`client.cloud.load_balancers.listeners.list` -> `list_listeners`, `client.iam.users.get` ->
`get_user`); where it has not, the same pattern with this API's own resource name. Code
generators turn these ids into method names, so they are short, stable and unique. A route
missing here gets FastAPI's long generated id, and tests/web/test_operation_ids.py, which
lists every operation's id, fails until it is added.
"""

from __future__ import annotations

from fastapi.routing import APIRoute
from fastapi.utils import generate_unique_id

# The longer paths, by their common stem.
_NOTIFICATIONS = "/iam/reselling/resellers/{resellerId}/notification_settings"
_NOTIFICATION = _NOTIFICATIONS + "/{notificationSettingsId}"
_LISTENERS = "/cloud/v1/lblisteners/{project_id}/{region_id}"
_TASKS = "/cloud/v1/tasks"
_POLICIES = "/cloud/v1/lifecycle_policy/{project_id}/{region_id}"
_PRICING = "/cloud/v2/pricing/{project_id}/{region_id}"
_USER_ACTIONS = "/cloud/v1/user_actions"


def _crud(collection: str, item: str, resource: str) -> dict[tuple[str, str], str]:
    """The five ids of a resource kept whole: created and listed at ``collection``, read,
    updated and deleted at ``item`` (the list's id takes the plural)."""
    return {
        ("POST", collection): f"create_{resource}",
        ("GET", collection): f"list_{resource}s",
        ("GET", item): f"get_{resource}",
        ("PATCH", item): f"update_{resource}",
        ("DELETE", item): f"delete_{resource}",
    }


def _tokens(collection: str, suffix: str) -> dict[tuple[str, str], str]:
    """The API tokens' four ids at ``collection`` (a version's), each ending in
    ``suffix``: listed and created there, read and deleted at ``/{tokenId}``."""
    item = collection + "/{tokenId}"
    return {
        ("GET", collection): f"list_api_tokens{suffix}",
        ("POST", collection): f"create_api_token{suffix}",
        ("GET", item): f"get_api_token{suffix}",
        ("DELETE", item): f"delete_api_token{suffix}",
    }


OPERATION_IDS: dict[tuple[str, str], str] = {
    ("GET", "/healthz"): "get_health",
    ("GET", "/readyz"): "get_readiness",
    # iam: accounts (SDK: iam.get_account_overview)
    ("GET", "/iam/clients"): "list_clients",
    ("GET", "/iam/clients/me"): "get_account_overview",
    ("GET", "/iam/clients/{clientId}"): "get_client",
    ("PATCH", "/iam/clients/{clientId}"): "update_client",
    ("DELETE", "/iam/clients/{clientId}"): "delete_client",
    # iam: users (SDK: iam.users)
    **_crud("/iam/users", "/iam/users/{userId}", "user"),
    # iam: a user's membership of one client account
    ("POST", "/iam/clients/{clientId}/client-users/create"): "create_client_user",
    ("GET", "/iam/clients/{clientId}/client-users/{userId}"): "get_client_user",
    ("PUT", "/iam/clients/{clientId}/client-users/{userId}"): "update_client_user",
    ("DELETE", "/iam/clients/{clientId}/client-users/{userId}"): "delete_client_user",
    # iam: sellers
    **_crud("/iam/admin/sellers", "/iam/admin/sellers/{sellerId}", "seller"),
    # iam: reseller branding
    ("GET", "/iam/reselling/settings"): "get_branding_settings",
    ("PUT", "/iam/reselling/settings"): "update_branding_settings",
    ("POST", "/iam/reselling/settings/upload"): "upload_branding_files",
    ("GET", "/iam/reselling/files/{name}"): "get_branding_file",
    # iam: reseller notification settings
    **_crud(_NOTIFICATIONS, _NOTIFICATION, "notification_setting"),
    # iam: activity log
    ("GET", "/iam/activity_log/requests"): "list_activity_log_requests",
    ("GET", "/iam/activity_log/requests/{id}"): "get_activity_log_request",
    # iam: API tokens (SDK: iam.api_tokens, which calls the v2 paths; v1 keeps its paths
    # under ids of its own)
    **_tokens("/iam/v2/clients/{clientId}/tokens", ""),
    **_tokens("/iam/clients/{clientId}/tokens", "_v1"),
    # iam: invitations (SDK: iam.users.invite) and the link they mail
    ("POST", "/iam/clients/invite_user"): "invite_user",
    ("POST", "/iam/auth/set-password"): "set_user_password",
    # billing
    ("GET", "/billing/org/v1/addendums"): "list_addendums",
    ("GET", "/billing/org/v1/addendums/{id}"): "get_addendum",
    # cloud: load-balancer listeners (SDK: cloud.load_balancers.listeners)
    ("GET", _LISTENERS): "list_listeners",
    ("GET", _LISTENERS + "/{listener_id}"): "get_listener",
    ("PATCH", _LISTENERS + "/{listener_id}"): "update_listener_name",  # deprecated: v2
    ("PATCH", "/cloud/v2/lblisteners/{project_id}/{region_id}/{listener_id}"): "update_listener",
    # cloud: tasks (SDK: cloud.tasks)
    ("GET", _TASKS): "list_tasks",
    ("GET", _TASKS + "/{task_id}"): "get_task",
    ("POST", _TASKS + "/{task_id}/acknowledge"): "acknowledge_task",
    ("POST", _TASKS + "/acknowledge_all"): "acknowledge_all_tasks",
    # cloud: snapshot lifecycle policies (SDK: cloud.snapshot_schedules)
    ("GET", _POLICIES): "list_snapshot_schedules",
    ("GET", _POLICIES + "/{policy_id}"): "get_snapshot_schedule",
    # cloud: Kubernetes price preview
    ("POST", _PRICING + "/k8s/clusters"): "preview_k8s_cluster_price",
    # cloud: users
    ("GET", "/cloud/v1/users"): "list_cloud_users",
    # cloud: user actions (SDK: cloud.audit_logs) and their subscriptions
    ("GET", _USER_ACTIONS): "list_audit_logs",
    ("POST", _USER_ACTIONS + "/subscribe_amqp"): "create_amqp_subscription",
    ("POST", _USER_ACTIONS + "/subscribe_amqp_test"): "test_amqp_subscription",
    ("POST", _USER_ACTIONS + "/unsubscribe_amqp"): "delete_amqp_subscription",
    ("GET", _USER_ACTIONS + "/amqp_subscriptions_list"): "list_amqp_subscriptions",
    ("GET", _USER_ACTIONS + "/amqp_subscriptions/{subscription_id}"): "get_amqp_subscription",
    ("PATCH", _USER_ACTIONS + "/amqp_subscriptions/{subscription_id}"): "update_amqp_subscription",
    ("POST", _USER_ACTIONS + "/subscribe"): "create_webhook_subscription",
    ("POST", _USER_ACTIONS + "/unsubscribe"): "delete_webhook_subscription",
    ("GET", _USER_ACTIONS + "/subscriptions_list"): "list_webhook_subscriptions",
}


def operation_id(route: APIRoute) -> str:
    """FastAPI's generate_unique_id_function: the route's id from OPERATION_IDS."""
    ids = {OPERATION_IDS.get((method, route.path_format)) for method in route.methods or ()}
    found = ids.pop() if len(ids) == 1 else None
    return found or generate_unique_id(route)
