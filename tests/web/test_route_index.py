"""web/route_index.py: each request is tried only on the routes whose pattern matches
its path, and gets the answer the whole table would give."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Host, Match, Router

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web import route_index
from cloudadmin.web.route_index import RouteIndex

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def probe_app(*, indexed: bool) -> FastAPI:
    app = FastAPI()

    @app.get("/items/me")
    async def me() -> dict[str, str]:
        return {"route": "me"}

    @app.get("/items/{item_id}")
    async def item(item_id: int) -> dict[str, Any]:
        return {"route": "item", "id": item_id}

    @app.put("/items/{item_id}")
    async def put_item(item_id: int) -> dict[str, Any]:
        return {"route": "put_item", "id": item_id}

    @app.get("/things/{thing}")
    async def thing(thing: str) -> dict[str, str]:
        return {"route": "thing", "thing": thing}

    @app.get("/things/special")
    async def special() -> dict[str, str]:  # never reached: the pattern above wins
        return {"route": "special"}

    @app.get("/slashed/")
    async def slashed() -> dict[str, str]:
        return {"route": "slashed"}

    @app.get("/link")
    async def link(request: Request) -> dict[str, str]:
        return {"route": "link", "url": str(request.url_for("item", item_id=7))}

    app.mount("/static", PlainTextResponse("mounted"), name="static")
    if indexed:
        route_index.install(app.router)
    return app


REQUESTS = [
    ("GET", "/items/me"),
    ("GET", "/items/5"),
    ("PUT", "/items/5"),
    ("DELETE", "/items/5"),
    ("POST", "/items/me"),
    ("GET", "/items/x"),
    ("GET", "/things/special"),
    ("GET", "/things/other"),
    ("GET", "/slashed"),
    ("GET", "/slashed/"),
    ("GET", "/items/5/"),
    ("GET", "/nowhere"),
    ("GET", "/link"),
    ("GET", "/static/file.txt"),
    ("HEAD", "/items/5"),
]


async def answers(app: FastAPI) -> list[tuple[int, str, str | None, str | None]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
        out = []
        for method, path in REQUESTS:
            r = await client.request(method, path)
            out.append((r.status_code, r.text, r.headers.get("allow"), r.headers.get("location")))
        return out


class TestSameAnswers:
    async def test_every_probe_request_is_answered_as_by_the_whole_table(self):
        indexed, whole = (
            await answers(probe_app(indexed=True)),
            await answers(probe_app(indexed=False)),
        )
        assert indexed == whole
        # The probe covers what matters: an earlier pattern winning, 405, the slash
        # redirect, 404, url_for reaching a route the path did not match, a mount.
        assert {status for status, *_ in whole} >= {200, 307, 404, 405, 422}
        assert '"route":"me"' in whole[0][1] and '"route":"thing"' in whole[6][1]
        assert "/items/7" in whole[12][1]

    async def test_the_index_is_what_answers(self, monkeypatch: pytest.MonkeyPatch):
        app = probe_app(indexed=True)
        tried: list[str] = []
        original = RouteIndex._router_for

        def spy(self: RouteIndex, path: str, table_size: int) -> Any:
            tried.append(path)
            return original(self, path, table_size)

        monkeypatch.setattr(RouteIndex, "_router_for", spy)
        app.router.middleware_stack = RouteIndex(app.router)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
            assert (await client.get("/items/5")).json() == {"route": "item", "id": 5}
            await client.get("/items/5")
        assert tried == ["/items/5"]  # worked out once for the path

    async def test_a_long_path_is_answered_and_not_kept(self):
        app = probe_app(indexed=True)
        index = app.router.middleware_stack
        assert isinstance(index, RouteIndex)
        long_id = "9" * (route_index.KEPT_PATH_LENGTH + 1)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
            assert (await client.get(f"/things/{long_id}")).json()["thing"] == long_id
            assert (await client.get("/things/short")).json()["thing"] == "short"
        assert index._for_path.cache_info().currsize == 1  # only the short one

    async def test_a_route_added_later_is_reached(self):
        app = probe_app(indexed=True)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
            assert (await client.get("/items/5")).json() == {"route": "item", "id": 5}

            @app.get("/items/{anything}")
            async def first(anything: str) -> dict[str, str]:
                return {"route": "first"}

            # Moved to the front of the table: it now wins for a path seen before.
            app.router.routes.insert(0, app.router.routes.pop())
            assert (await client.get("/items/5")).json() == {"route": "first"}

    async def test_a_table_with_a_host_route_is_left_to_the_router(self):
        app = probe_app(indexed=True)
        app.router.routes.insert(0, Host("other.example", app=Router()))
        index = app.router.middleware_stack
        assert isinstance(index, RouteIndex)
        assert index._router_for("/items/5", len(app.router.routes)) is None
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
            assert (await client.get("/items/5")).json() == {"route": "item", "id": 5}


def chosen(routes: list[BaseRoute], scope: dict[str, Any]) -> BaseRoute | None:
    """The route a router picks: the first full match, else the first partial one."""
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def paths_to_try(route_path: str) -> list[str]:
    """A route's path with its parameters filled, and near misses of it."""
    filled = re.sub(r"\{[^}]*\}", "7", route_path)
    literal = route_path.partition("{")[0]
    return [filled, filled + "/", filled + "/x", filled[:-1], literal, literal + "x", "/"]


class TestTheServicesTable:
    @pytest.fixture(scope="class")
    @classmethod
    def app(cls) -> FastAPI:
        return create_app(Settings())

    def test_it_is_installed(self, app: FastAPI):
        assert isinstance(app.router.middleware_stack, RouteIndex)

    def test_every_route_and_method_picks_the_same_route(self, app: FastAPI):
        index = app.router.middleware_stack
        assert isinstance(index, RouteIndex)
        routes = app.router.routes
        paths = {p for r in routes for p in paths_to_try(getattr(r, "path", ""))}
        paths.add("/nowhere")
        checked = 0
        for path in sorted(paths):
            narrowed = index._router_for(path, len(routes))
            for method in METHODS:
                scope = {"type": "http", "path": path, "root_path": "", "method": method}
                whole = chosen(routes, scope)
                if narrowed is None:
                    assert whole is None, (method, path)
                else:
                    assert chosen(narrowed.routes, scope) is whole, (method, path)
                    checked += whole is not None
        assert checked > 2 * len(routes)
