"""The OpenAPI document lists every status an operation may answer (issue 13), so a
client (and schemathesis' status_code_conformance) meets no undocumented one."""

from __future__ import annotations

from typing import Any

import httpx

ERROR = {"$ref": "#/components/schemas/Error"}


async def operations(client: httpx.AsyncClient) -> dict[tuple[str, str], dict[str, Any]]:
    spec = (await client.get("/openapi.json")).json()
    return {
        (method, path): op for path, item in spec["paths"].items() for method, op in item.items()
    }


def error_codes(op: dict[str, Any]) -> set[str]:
    return {
        code
        for code, resp in op["responses"].items()
        if resp.get("content", {}).get("application/json", {}).get("schema") == ERROR
    }


class TestGenericErrors:
    async def test_every_operation_documents_auth_throttle_and_unavailable(
        self, client: httpx.AsyncClient
    ):
        for (method, path), op in (await operations(client)).items():
            if path in ("/healthz", "/readyz"):
                continue
            assert {"400", "401", "403", "404", "429", "503"} <= error_codes(op), (method, path)

    async def test_operations_with_a_body_document_408_413_415(self, client: httpx.AsyncClient):
        ops = await operations(client)
        with_body = [op for op in ops.values() if "requestBody" in op]
        assert with_body
        for op in with_body:
            assert {"408", "413", "415"} <= error_codes(op)
        seller = ops[("get", "/iam/admin/sellers/{sellerId}")]
        assert not {"408", "413", "415"} & set(seller["responses"])

    async def test_changes_document_409_and_posts_422(self, client: httpx.AsyncClient):
        ops = await operations(client)
        assert "409" in error_codes(ops[("delete", "/iam/clients/{clientId}")])
        assert "409" in error_codes(ops[("patch", "/iam/admin/sellers/{sellerId}")])
        assert {"409", "422"} <= error_codes(ops[("post", "/iam/admin/sellers")])
        assert "422" not in ops[("patch", "/iam/admin/sellers/{sellerId}")]["responses"]
        assert "409" not in ops[("get", "/iam/admin/sellers/{sellerId}")]["responses"]

    async def test_retry_after_is_documented_on_429_and_503(self, client: httpx.AsyncClient):
        op = (await operations(client))[("get", "/iam/activity_log/requests")]
        for code in ("429", "503"):
            assert "Retry-After" in op["responses"][code]["headers"]

    async def test_conflicts_say_which(self, client: httpx.AsyncClient):
        ops = await operations(client)
        op = ops[("post", "/cloud/v1/user_actions/subscribe_amqp")]
        # First; the Idempotency-Key's own 409 is added after it.
        assert op["responses"]["409"]["description"].startswith(
            "The account already has a subscription"
        )
        op = ops[("patch", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")]
        assert op["responses"]["409"]["description"].startswith("The listener is locked by a task")

    async def test_errors_described_by_an_endpoint_have_the_error_body(
        self, client: httpx.AsyncClient
    ):
        op = (await operations(client))[("get", "/iam/clients/{clientId}/client-users/{userId}")]
        own = "User is not found in the specified account."
        assert op["responses"]["404"]["description"] == own
        assert "404" in error_codes(op)


class TestHealth:
    async def test_readyz_documents_503_healthz_only_200(self, client: httpx.AsyncClient):
        ops = await operations(client)
        assert set(ops[("get", "/readyz")]["responses"]) == {"200", "503"}
        assert set(ops[("get", "/healthz")]["responses"]) == {"200"}
