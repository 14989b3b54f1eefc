"""Every operation has a short operationId in the style of the provider's SDK methods.

The full mapping is written out here, so that renaming an operation (which renames the
method of every generated client) shows in a test's diff.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from gcore import Gcore

EXPECTED = {
    ("GET", "/healthz"): "get_health",
    ("GET", "/readyz"): "get_readiness",
    ("GET", "/iam/clients"): "list_clients",
    ("GET", "/iam/clients/me"): "get_account_overview",
    ("GET", "/iam/clients/{clientId}"): "get_client",
    ("PATCH", "/iam/clients/{clientId}"): "update_client",
    ("DELETE", "/iam/clients/{clientId}"): "delete_client",
    ("POST", "/iam/users"): "create_user",
    ("GET", "/iam/users"): "list_users",
    ("GET", "/iam/users/{userId}"): "get_user",
    ("PATCH", "/iam/users/{userId}"): "update_user",
    ("DELETE", "/iam/users/{userId}"): "delete_user",
    ("POST", "/iam/clients/{clientId}/client-users/create"): "create_client_user",
    ("GET", "/iam/clients/{clientId}/client-users/{userId}"): "get_client_user",
    ("PUT", "/iam/clients/{clientId}/client-users/{userId}"): "update_client_user",
    ("DELETE", "/iam/clients/{clientId}/client-users/{userId}"): "delete_client_user",
    ("POST", "/iam/admin/sellers"): "create_seller",
    ("GET", "/iam/admin/sellers"): "list_sellers",
    ("GET", "/iam/admin/sellers/{sellerId}"): "get_seller",
    ("PATCH", "/iam/admin/sellers/{sellerId}"): "update_seller",
    ("DELETE", "/iam/admin/sellers/{sellerId}"): "delete_seller",
    ("GET", "/iam/reselling/settings"): "get_branding_settings",
    ("PUT", "/iam/reselling/settings"): "update_branding_settings",
    ("POST", "/iam/reselling/settings/upload"): "upload_branding_files",
    ("GET", "/iam/reselling/files/{name}"): "get_branding_file",
    (
        "GET",
        "/iam/reselling/resellers/{resellerId}/notification_settings",
    ): "list_notification_settings",
    (
        "POST",
        "/iam/reselling/resellers/{resellerId}/notification_settings",
    ): "create_notification_setting",
    (
        "GET",
        "/iam/reselling/resellers/{resellerId}/notification_settings/{notificationSettingsId}",
    ): "get_notification_setting",
    (
        "PATCH",
        "/iam/reselling/resellers/{resellerId}/notification_settings/{notificationSettingsId}",
    ): "update_notification_setting",
    (
        "DELETE",
        "/iam/reselling/resellers/{resellerId}/notification_settings/{notificationSettingsId}",
    ): "delete_notification_setting",
    ("GET", "/iam/activity_log/requests"): "list_activity_log_requests",
    ("GET", "/iam/activity_log/requests/{id}"): "get_activity_log_request",
    ("GET", "/iam/v2/clients/{clientId}/tokens"): "list_api_tokens",
    ("POST", "/iam/v2/clients/{clientId}/tokens"): "create_api_token",
    ("GET", "/iam/v2/clients/{clientId}/tokens/{tokenId}"): "get_api_token",
    ("DELETE", "/iam/v2/clients/{clientId}/tokens/{tokenId}"): "delete_api_token",
    ("GET", "/iam/clients/{clientId}/tokens"): "list_api_tokens_v1",
    ("POST", "/iam/clients/{clientId}/tokens"): "create_api_token_v1",
    ("GET", "/iam/clients/{clientId}/tokens/{tokenId}"): "get_api_token_v1",
    ("DELETE", "/iam/clients/{clientId}/tokens/{tokenId}"): "delete_api_token_v1",
    ("POST", "/iam/clients/invite_user"): "invite_user",
    ("POST", "/iam/auth/set-password"): "set_user_password",
    ("GET", "/billing/org/v1/addendums"): "list_addendums",
    ("GET", "/billing/org/v1/addendums/{id}"): "get_addendum",
    ("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}"): "list_listeners",
    ("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}"): "get_listener",
    (
        "PATCH",
        "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}",
    ): "update_listener_name",
    ("PATCH", "/cloud/v2/lblisteners/{project_id}/{region_id}/{listener_id}"): "update_listener",
    ("GET", "/cloud/v1/tasks"): "list_tasks",
    ("GET", "/cloud/v1/tasks/{task_id}"): "get_task",
    ("POST", "/cloud/v1/tasks/{task_id}/acknowledge"): "acknowledge_task",
    ("POST", "/cloud/v1/tasks/acknowledge_all"): "acknowledge_all_tasks",
    ("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}"): "list_snapshot_schedules",
    (
        "GET",
        "/cloud/v1/lifecycle_policy/{project_id}/{region_id}/{policy_id}",
    ): "get_snapshot_schedule",
    (
        "POST",
        "/cloud/v2/pricing/{project_id}/{region_id}/k8s/clusters",
    ): "preview_k8s_cluster_price",
    ("GET", "/cloud/v1/users"): "list_cloud_users",
    ("GET", "/cloud/v1/user_actions"): "list_audit_logs",
    ("POST", "/cloud/v1/user_actions/subscribe_amqp"): "create_amqp_subscription",
    ("POST", "/cloud/v1/user_actions/subscribe_amqp_test"): "test_amqp_subscription",
    ("POST", "/cloud/v1/user_actions/unsubscribe_amqp"): "delete_amqp_subscription",
    ("GET", "/cloud/v1/user_actions/amqp_subscriptions_list"): "list_amqp_subscriptions",
    ("GET", "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}"): "get_amqp_subscription",
    (
        "PATCH",
        "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}",
    ): "update_amqp_subscription",
    ("POST", "/cloud/v1/user_actions/subscribe"): "create_webhook_subscription",
    ("POST", "/cloud/v1/user_actions/unsubscribe"): "delete_webhook_subscription",
    ("GET", "/cloud/v1/user_actions/subscriptions_list"): "list_webhook_subscriptions",
}

# Where the SDK has the operation: the SDK attribute path whose last part, with the
# resource's name, makes the operationId.
IN_SDK = {
    "get_account_overview": "iam.get_account_overview",
    "list_users": "iam.users.list",
    "get_user": "iam.users.get",
    "update_user": "iam.users.update",
    "list_api_tokens": "iam.api_tokens.list",
    "create_api_token": "iam.api_tokens.create",
    "get_api_token": "iam.api_tokens.get",
    "delete_api_token": "iam.api_tokens.delete",
    "list_listeners": "cloud.load_balancers.listeners.list",
    "get_listener": "cloud.load_balancers.listeners.get",
    "update_listener": "cloud.load_balancers.listeners.update",
    "list_snapshot_schedules": "cloud.snapshot_schedules.list",
    "get_snapshot_schedule": "cloud.snapshot_schedules.get",
    "list_audit_logs": "cloud.audit_logs.list",
    "invite_user": "iam.users.invite",
    "list_tasks": "cloud.tasks.list",
    "get_task": "cloud.tasks.get",
    "acknowledge_task": "cloud.tasks.acknowledge_one",
    "acknowledge_all_tasks": "cloud.tasks.acknowledge_all",
}
VERBS = {
    "list", "get", "create", "update", "delete", "upload", "preview", "test", "acknowledge",
    "invite", "set",
}  # fmt: skip


async def operation_ids(client: httpx.AsyncClient) -> dict[tuple[str, str], Any]:
    spec = (await client.get("/openapi.json")).json()
    return {
        (method.upper(), path): op.get("operationId")
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }


class TestOperationIds:
    async def test_every_operation_has_its_expected_id(self, client: httpx.AsyncClient):
        got = await operation_ids(client)
        assert {k: v for k, v in got.items() if EXPECTED.get(k) != v} == {}
        assert set(got) == set(EXPECTED)

    async def test_ids_are_unique(self, client: httpx.AsyncClient):
        ids = list((await operation_ids(client)).values())
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)

    def test_ids_are_verb_underscore_resource(self):
        for op_id in EXPECTED.values():
            assert re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", op_id), op_id
            assert op_id.split("_", 1)[0] in VERBS, op_id


class TestSdkNames:
    def test_sdk_has_the_method_the_id_names(self):
        sdk = Gcore(api_key="1_unused", base_url="http://127.0.0.1:9")
        for op_id, path in IN_SDK.items():
            assert op_id in EXPECTED.values(), op_id
            target: Any = sdk
            for part in path.split("."):
                target = getattr(target, part)
            assert callable(target), path
            parts = path.split(".")
            verb = parts[-1].split("_", 1)[0]
            assert op_id.startswith(f"{verb}_"), (op_id, path)
        sdk.close()
