"""/openapi.json describes the implemented operations, /docs serves it, health checks."""

from __future__ import annotations

from typing import Any

import httpx

from cloudadmin.web.app_state import app_state
from cloudadmin.web.route import ApiRoute


class TestOpenApi:
    async def test_operations_and_security(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        paths = spec["paths"]
        assert set(paths["/iam/admin/sellers/{sellerId}"]) == {"get", "patch", "delete"}
        assert "post" in paths["/iam/admin/sellers"]
        assert "get" in paths["/iam/activity_log/requests"]
        scheme = spec["components"]["securitySchemes"]["APIKey"]
        assert scheme == {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`apikey <id>_<secret>`",
        }
        op = paths["/iam/admin/sellers"]["post"]
        assert op["security"] == [{"APIKey": []}]
        # FastAPI's validation 422 is gone (validation answers 400); the one left is the
        # Idempotency-Key's (docs/errors.md).
        assert "Idempotency-Key" in op["responses"]["422"]["description"]
        assert "422" not in paths["/iam/admin/sellers/{sellerId}"]["patch"]["responses"]
        assert op["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        assert "HTTPValidationError" not in spec["components"]["schemas"]
        assert op["responses"]["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }

    async def test_the_api_key_scheme_secures_every_authenticated_operation(
        self, client: httpx.AsyncClient, app: Any
    ):
        """get_caller reads the header itself; the document still names the scheme on
        each operation whose route authenticates (web/openapi.py), and on no other."""
        paths = (await client.get("/openapi.json")).json()["paths"]
        secured = 0
        for route in app.routes:
            if isinstance(route, ApiRoute) and route.include_in_schema:
                for method in route.methods:
                    op = paths[route.path_format][method.lower()]
                    assert ("security" in op) is route.authenticates, (route.path, method)
                    secured += route.authenticates
        assert secured >= 50
        assert "security" not in paths["/healthz"]["get"]

    async def test_seller_schema_is_exact(self, client: httpx.AsyncClient):
        schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
        seller = schemas["Seller"]
        assert set(seller["required"]) == {
            "id",
            "email",
            "full_name",
            "reseller_name",
            "company",
            "date_joined",
            "activated",
            "deleted",
        }
        assert seller["properties"]["email"]["maxLength"] == 150
        write = schemas["SellerWrite"]
        assert set(write["required"]) == {"email", "full_name"}
        assert write["properties"]["email"]["format"] == "email"
        phone = write["properties"]["phone"]["anyOf"][0]
        assert phone["maxLength"] == 30 and phone["pattern"] == r"^[a-z0-9+\-()#, *]*$"
        page = schemas["ActivityLogPage"]
        assert set(page["properties"]) == {"count", "result", "next", "previous"}
        assert set(page["required"]) == {"count", "result", "next", "previous"}

    async def test_patch_bodies_advertise_null_only_where_it_is_taken(
        self, client: httpx.AsyncClient
    ):
        # A PATCH field may be left out; only some take null (kit/omit.py, Omittable).
        schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]

        def takes_null(prop: dict[str, Any]) -> bool:
            return {"type": "null"} in prop.get("anyOf", [])

        expected = {
            "UserPatch": {"name", "phone"},
            "ClientPatch": {"custom_id", "name", "phone", "seller"},
            "NotificationSettingPatch": set(),
        }
        for model, nullable in expected.items():
            props = schemas[model]["properties"]
            assert {name for name, prop in props.items() if takes_null(prop)} == nullable
            assert "required" not in schemas[model]
        assert schemas["UserPatch"]["properties"]["auth_types"]["maxItems"] == 4

    async def test_addendum_list_documents_every_filter(self, client: httpx.AsyncClient):
        # The list validates its query model itself (web/query_model.py); the document
        # must still show each filter, and the page schema.
        from cloudadmin.billing.addendums.schemas import AddendumQuery

        spec = (await client.get("/openapi.json")).json()
        op = spec["paths"]["/billing/org/v1/addendums"]["get"]
        params = {p["name"]: p for p in op["parameters"]}
        assert set(params) == set(AddendumQuery.model_fields)
        assert all(p["in"] == "query" and not p["required"] for p in params.values())
        status = params["status"]["schema"]["anyOf"][0]
        assert status["type"] == "array"
        assert set(status["items"]["enum"]) == {"upcoming", "active", "paused", "stopped"}
        assert params["limit"]["schema"]["maximum"] == 100
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": "#/components/schemas/AddendumPage"}

    async def test_client_list_documents_its_query_model(self, client: httpx.AsyncClient):
        # ApiRoute documents a query model (web/query_model.py) the route does not list.
        from cloudadmin.iam.clients.query import ClientListQuery

        spec = (await client.get("/openapi.json")).json()
        params = spec["paths"]["/iam/clients"]["get"]["parameters"]
        assert [p["name"] for p in params] == list(ClientListQuery.model_fields)
        assert all(p["in"] == "query" for p in params)

    async def test_a_description_is_the_handler_docstring(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        op = spec["paths"]["/iam/users/{userId}"]["get"]
        # One line, as written across two in the source.
        assert op["description"] == (
            "A user of an account the caller sees (a reseller: its own and its clients'; "
            "everyone else: its own)."
        )
        assert op["summary"] == "Get user's details"

    async def test_docs_page(self, client: httpx.AsyncClient):
        r = await client.get("/docs")
        assert r.status_code == 200 and "swagger" in r.text.lower()


class TestHealth:
    async def test_healthz_and_readyz_need_no_key(self, client: httpx.AsyncClient):
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await client.get("/readyz")).json() == {"status": "ready"}


class TestDatabaseDown:
    async def test_503_with_retry_after(self, tmp_path):  # type: ignore[no-untyped-def]
        from cloudadmin.app import create_app
        from cloudadmin.config import Settings

        app = create_app(
            Settings(
                database_url="postgresql+asyncpg://nobody@127.0.0.1:9/none",
                secret_key="k",
                data_dir=tmp_path,
            )
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            ready = await c.get("/readyz")
            call = await c.get("/iam/admin/sellers/1", headers={"Authorization": "apikey 1_x"})
        await app_state(app).engine.dispose()
        for r in (ready, call):
            assert r.status_code == 503, r.text
            assert r.json()["exception_class"] == "ServiceUnavailable"
            assert r.headers["retry-after"]
            assert "nobody" not in r.text
