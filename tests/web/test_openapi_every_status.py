"""Walks the whole OpenAPI document: each operation lists the statuses it can answer, each
with the one error body (issue 15): 409 where a change can conflict, 413 and 415 wherever
there is a body, 429 wherever a key is checked, 503 wherever the database is used."""

from __future__ import annotations

from typing import Any

import httpx

ERROR = {"$ref": "#/components/schemas/Error"}
# The operations whose service answers 409 for a taken email (tests/iam show each one),
# and the field named in the error's `errors`.
CONFLICTS = {
    ("post", "/iam/users"): "errors.email",
    ("patch", "/iam/users/{userId}"): "errors.email",
    ("post", "/iam/clients/{clientId}/client-users/create"): "errors.username",
    ("post", "/iam/admin/sellers"): "errors.email",
    ("patch", "/iam/admin/sellers/{sellerId}"): "errors.email",
}
NO_DATABASE = {("get", "/healthz")}  # answers from the process alone


async def walk(client: httpx.AsyncClient) -> list[tuple[str, str, dict[str, Any]]]:
    spec = (await client.get("/openapi.json")).json()
    return [
        (method, path, op) for path, item in spec["paths"].items() for method, op in item.items()
    ]


def has_error_body(op: dict[str, Any], code: str) -> bool:
    response = op["responses"].get(code, {})
    return bool(response.get("content", {}).get("application/json", {}).get("schema") == ERROR)


class TestEveryOperation:
    async def test_503_with_retry_after_wherever_the_database_is_used(
        self, client: httpx.AsyncClient
    ):
        missing = [
            (m, p)
            for m, p, op in await walk(client)
            if (m, p) not in NO_DATABASE
            and not (
                has_error_body(op, "503")
                and "Retry-After" in op["responses"]["503"].get("headers", {})
            )
        ]
        assert not missing

    async def test_429_on_every_authenticated_operation(self, client: httpx.AsyncClient):
        ops = await walk(client)
        # The throttle admits every API request, with a key or not (the public branding
        # files are throttled by address): all but the health checks.
        throttled = [(m, p, op) for m, p, op in ops if p not in ("/healthz", "/readyz")]
        assert all(
            op.get("security")
            for m, p, op in throttled
            if p not in ("/iam/reselling/files/{name}", "/iam/auth/set-password")
        )
        missing = [
            (m, p)
            for m, p, op in throttled
            if not (
                has_error_body(op, "429") and "Retry-After" in op["responses"]["429"]["headers"]
            )
        ]
        assert not missing

    async def test_413_and_415_on_every_operation_with_a_body(self, client: httpx.AsyncClient):
        with_body = [(m, p, op) for m, p, op in await walk(client) if "requestBody" in op]
        assert len(with_body) >= 15
        missing = [
            (m, p, code)
            for m, p, op in with_body
            for code in ("413", "415")
            if not has_error_body(op, code)
        ]
        assert not missing

    async def test_409_says_which_conflict(self, client: httpx.AsyncClient):
        ops = {(m, p): op for m, p, op in await walk(client)}
        for key, field in CONFLICTS.items():
            op = ops[key]
            assert has_error_body(op, "409"), key
            assert field in op["responses"]["409"]["description"], key

    async def test_409_on_every_change(self, client: httpx.AsyncClient):
        missing = [
            (m, p)
            for m, p, op in await walk(client)
            if m in {"post", "put", "patch", "delete"} and not has_error_body(op, "409")
        ]
        assert not missing

    async def test_every_error_status_has_the_error_body(self, client: httpx.AsyncClient):
        bare = [
            (m, p, code)
            for m, p, op in await walk(client)
            for code in op["responses"]
            if code.isdigit() and int(code) >= 400 and not has_error_body(op, code)
        ]
        assert not bare
