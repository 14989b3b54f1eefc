"""errors.md: one body shape for every status, from one renderer."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin import errors
from cloudadmin.web.route import ApiRoute
from tests.factories import Landscape, auth, landscape

SELLERS = "/iam/admin/sellers"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def assert_error(r: httpx.Response, status: int, exception_class: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["exception_class"] == exception_class
    assert isinstance(body["message"], str) and body["message"]
    assert body["request_id"] == r.headers["x-request-id"]
    return body


class TestRequestId:
    async def test_generated_when_absent(self, client: httpx.AsyncClient):
        r = await client.get("/healthz")
        assert len(r.headers["x-request-id"]) == 36

    async def test_sane_incoming_id_is_kept(self, client: httpx.AsyncClient):
        r = await client.get("/nowhere", headers={"X-Request-ID": "abc-123"})
        assert r.headers["x-request-id"] == "abc-123"
        assert r.json()["request_id"] == "abc-123"

    async def test_insane_incoming_id_is_replaced(self, client: httpx.AsyncClient):
        r = await client.get("/healthz", headers={"X-Request-ID": "<script>" * 20})
        assert r.headers["x-request-id"] != "<script>" * 20


class TestStatuses:
    async def test_400_validation_not_422(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(SELLERS, json={"email": "x"}, headers=auth(ls.reseller))
        body = assert_error(r, 400, "ValidationError")
        assert set(body["errors"]) == {"email", "full_name"}  # type: ignore[arg-type]

    async def test_400_query_parameter_named(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get("/iam/activity_log/requests?limit=0", headers=auth(ls.reseller))
        body = assert_error(r, 400, "ValidationError")
        assert list(body["errors"]) == ["limit"]  # type: ignore[arg-type]

    async def test_400_bad_json_is_parse_error(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            SELLERS,
            content=b'{"email": ',
            headers={**auth(ls.reseller), "Content-Type": "application/json"},
        )
        body = assert_error(r, 400, "ParseError")
        assert str(body["message"]).startswith("JSON parse error - ")

    async def test_400_body_not_an_object(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(SELLERS, json=[1, 2], headers=auth(ls.reseller))
        assert_error(r, 400, "ValidationError")

    async def test_401(self, client: httpx.AsyncClient):
        assert_error(await client.get(f"{SELLERS}/1"), 401, "not_authenticated")

    async def test_403(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get(f"{SELLERS}/1", headers=auth(ls.client_member))
        assert_error(r, 403, "PermissionDenied")

    async def test_404_resource(self, client: httpx.AsyncClient, ls: Landscape):
        assert_error(
            await client.get(f"{SELLERS}/5", headers=auth(ls.reseller)), 404, "NotFoundError"
        )

    async def test_404_unknown_path(self, client: httpx.AsyncClient):
        assert_error(await client.get("/no/such/path"), 404, "NotFoundError")

    async def test_405_with_allow(self, client: httpx.AsyncClient):
        r = await client.delete(SELLERS)
        assert_error(r, 405, "HTTPError")
        assert "POST" in r.headers["allow"]

    async def test_409(self, client: httpx.AsyncClient, ls: Landscape):
        body = {"email": "dup@example.com", "full_name": "D"}
        await client.post(SELLERS, json=body, headers=auth(ls.reseller))
        r = await client.post(SELLERS, json=body, headers=auth(ls.reseller))
        assert_error(r, 409, "ConflictError")

    async def test_413_declared_length(self, client: httpx.AsyncClient, ls: Landscape):
        big = b'{"email": "' + b"a" * (1024 * 1024) + b'"}'
        r = await client.post(
            SELLERS, content=big, headers={**auth(ls.reseller), "Content-Type": "application/json"}
        )
        assert_error(r, 413, "PayloadTooLarge")

    async def test_413_streamed_without_length(self, client: httpx.AsyncClient, ls: Landscape):
        async def chunks():
            for _ in range(20):
                yield b"x" * 65536

        r = await client.post(
            SELLERS,
            content=chunks(),
            headers={**auth(ls.reseller), "Content-Type": "application/json"},
        )
        assert_error(r, 413, "PayloadTooLarge")

    async def test_body_just_under_limit_is_read(self, client: httpx.AsyncClient, ls: Landscape):
        body = b'{"email": "a@b.example", "full_name": "' + b"x" * (1024 * 1000) + b'"}'
        r = await client.post(
            SELLERS, content=body, headers={**auth(ls.reseller), "Content-Type": "application/json"}
        )
        assert_error(r, 400, "ValidationError")  # too long a name, but read and judged

    async def test_415_wrong_content_type(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            SELLERS,
            content=b'{"email": "a@b.example", "full_name": "A"}',
            headers={**auth(ls.reseller), "Content-Type": "text/plain"},
        )
        assert_error(r, 415, "UnsupportedMediaType")


class TestUnexpectedFailure:
    async def test_500_says_only_the_request_id(self, app: FastAPI, ls: Landscape):
        router = APIRouter(route_class=ApiRoute)

        @router.get("/boom")
        async def boom() -> None:
            raise RuntimeError("secret detail /etc/passwd SELECT * FROM users")

        app.include_router(router)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            r = await c.get("/boom")
        body = assert_error(r, 500, "InternalError")
        assert "secret" not in r.text and "SELECT" not in r.text and "/etc" not in r.text
        assert body["request_id"] in str(body["message"])


class TestFieldMapName:
    def test_cloud_paths_use_invalid_fields(self):
        from cloudadmin.web.error_render import field_map_name

        assert field_map_name("/cloud/v1/users") == "invalid_fields"
        assert field_map_name("/iam/admin/sellers") == "errors"
        assert field_map_name("/billing/org/v1/addendums") == "errors"


# The wire name of a class that declares its status is its own name unless its
# declaration spells another, so a renamed class must not rename what clients match on.
@pytest.mark.parametrize(
    ("name", "status", "exception_class"),
    [
        ("ValidationError", 400, "ValidationError"),
        ("ParseError", 400, "ParseError"),
        ("NotAuthenticated", 401, "not_authenticated"),
        ("TokenNotValid", 401, "token_not_valid"),
        ("PermissionDenied", 403, "PermissionDenied"),
        ("NotFound", 404, "NotFoundError"),
        ("MethodNotAllowed", 405, "HTTPError"),
        ("RequestTimeout", 408, "RequestTimeout"),
        ("Conflict", 409, "ConflictError"),
        ("PayloadTooLarge", 413, "PayloadTooLarge"),
        ("UnsupportedMediaType", 415, "UnsupportedMediaType"),
        ("Unprocessable", 422, "UnprocessableEntity"),
        ("Throttled", 429, "Throttled"),
        ("InternalError", 500, "InternalError"),
        ("ServiceUnavailable", 503, "ServiceUnavailable"),
    ],
)
def test_declared_status_and_wire_name(name: str, status: int, exception_class: str):
    error = getattr(errors, name)()
    assert (error.status_code, error.exception_class) == (status, exception_class)
    assert error.message == type(error).default_message != ""


def test_a_subclass_that_keeps_its_status_keeps_its_wire_name():
    class Refined(errors.TokenNotValid):
        pass

    class OwnKind(errors.ApiError, status=418):
        pass

    assert (Refined().status_code, Refined().exception_class) == (401, "token_not_valid")
    assert OwnKind().exception_class == "OwnKind"


def test_declared_headers_and_retry_after():
    assert errors.TokenNotValid().headers == {"WWW-Authenticate": "APIKey"}
    assert errors.NotFound(headers={"Allow": "GET"}).headers == {"Allow": "GET"}
    assert errors.Throttled(retry_after=0).headers == {"Retry-After": "1"}
    assert errors.Throttled(retry_after=7).headers == {"Retry-After": "7"}
    assert errors.ServiceUnavailable("busy").headers == {"Retry-After": "5"}
    # One error's headers are its own: the declared ones are not shared and changed.
    errors.TokenNotValid().headers["X"] = "y"
    assert errors.NotAuthenticated().headers == {"WWW-Authenticate": "APIKey"}
