"""web/direct_call.py: a route whose dependencies take only the request is answered
without FastAPI's solver, exactly as the solver would answer it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import httpx
import pytest
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.routing import APIRoute, request_response
from starlette.responses import Response

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.direct_call import direct_handler
from cloudadmin.web.route import ApiRoute


class DirectRoute(APIRoute):
    """A plain FastAPI route that takes the direct path when it qualifies."""

    calls_directly = False

    def get_route_handler(self) -> Any:
        solved = super().get_route_handler()
        direct = direct_handler(self, solved)
        self.calls_directly = direct is not None
        return direct or solved


async def first(request: Request) -> str:
    request.app.state.awaited.append("first")
    if request.query_params.get("refuse"):
        raise HTTPException(status_code=409, detail="refused by a dependency")
    return request.url.path


async def second(request: Request) -> int:
    request.app.state.awaited.append("second")
    return len(request.query_params)


def sync_dependency(request: Request) -> str:
    return "sync"


async def held(request: Request) -> AsyncIterator[str]:
    yield "held"


# Module-level: the endpoints' annotations are strings FastAPI resolves here.
First = Annotated[str, Depends(first)]
Second = Annotated[int, Depends(second)]


async def nested(a: First) -> str:
    return a + "!"


def probe_app(awaited: list[str]) -> FastAPI:
    app = FastAPI()
    app.router.route_class = DirectRoute
    app.state.awaited = awaited

    @app.get("/direct")
    async def direct(request: Request, a: First, b: Second, again: First) -> Response:
        return Response(f"{request.method} {a} {b} {again}", headers={"X-Probe": "1"})

    @app.get("/item/{item_id}")
    async def with_path(item_id: int, a: First) -> Response:
        return Response(f"{item_id} {a}")

    @app.get("/model")
    async def returns_a_dict(a: First) -> dict[str, str]:
        return {"a": a}

    @app.get("/sync")
    async def with_sync(a: Annotated[str, Depends(sync_dependency)]) -> Response:
        return Response(a)

    @app.get("/yield")
    async def with_yield(a: Annotated[str, Depends(held)]) -> Response:
        return Response(a)

    @app.get("/nested")
    async def with_nested(a: Annotated[str, Depends(nested)]) -> Response:
        return Response(a)

    @app.get("/uncached")
    async def uncached(a: Annotated[str, Depends(first, use_cache=False)]) -> Response:
        return Response(a)

    return app


def route(app: FastAPI, path: str) -> Any:
    return next(r for r in app.routes if getattr(r, "path", None) == path)


@pytest.fixture
def awaited() -> list[str]:
    return []


@pytest.fixture
async def probe(awaited: list[str]) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = probe_app(awaited)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
        yield app, client


class TestWhichRoutesQualify:
    def test_request_only_dependencies_and_a_response(
        self, probe: tuple[FastAPI, httpx.AsyncClient]
    ):
        app, _ = probe
        assert route(app, "/direct").calls_directly

    @pytest.mark.parametrize(
        "path", ["/item/{item_id}", "/model", "/sync", "/yield", "/nested", "/uncached"]
    )
    def test_anything_else_goes_through_the_solver(
        self, probe: tuple[FastAPI, httpx.AsyncClient], path: str
    ):
        app, _ = probe
        assert not route(app, path).calls_directly

    def test_the_addendum_list_and_the_client_list_are_called_directly(self):
        app = create_app(Settings())
        direct = {
            r.path
            for r in app.routes
            if isinstance(r, ApiRoute) and r.calls_directly and "GET" in (r.methods or ())
        }
        assert {"/billing/org/v1/addendums", "/iam/clients"} <= direct
        assert not route(app, "/billing/org/v1/addendums/{id}").calls_directly


class TestDirectCall:
    async def test_the_answer_is_the_endpoints_response(
        self, probe: tuple[FastAPI, httpx.AsyncClient]
    ):
        _, client = probe
        answer = await client.get("/direct", params={"x": "1", "y": "2"})
        assert answer.status_code == 200
        assert answer.text == "GET /direct 2 /direct"
        assert answer.headers["x-probe"] == "1"

    async def test_each_dependency_is_awaited_once_in_declared_order(
        self, probe: tuple[FastAPI, httpx.AsyncClient], awaited: list[str]
    ):
        _, client = probe
        await client.get("/direct")
        await client.get("/direct")
        assert awaited == ["first", "second", "first", "second"]

    async def test_a_dependencys_error_is_answered_as_the_solver_answers_it(
        self, probe: tuple[FastAPI, httpx.AsyncClient], awaited: list[str]
    ):
        _, client = probe
        answer = await client.get("/direct", params={"refuse": "1"})
        assert answer.status_code == 409
        assert answer.json() == {"detail": "refused by a dependency"}
        assert awaited == ["first"]  # nothing after the refusal

    async def test_overrides_are_solved_by_fastapi(
        self, probe: tuple[FastAPI, httpx.AsyncClient], awaited: list[str]
    ):
        app, client = probe

        async def overridden(request: Request) -> str:
            return "overridden"

        app.dependency_overrides[first] = overridden
        answer = await client.get("/direct")
        assert answer.text == "GET overridden 0 overridden"
        assert awaited == ["second"]


class TestSameAsTheSolver:
    async def test_same_status_headers_and_body(self, awaited: list[str]):
        """The probe app answered by FastAPI's own handler gives the same bytes."""
        solved_app = probe_app([])
        answers: list[tuple[int, str, str | None]] = []
        for app in (probe_app(awaited), _solved(solved_app)):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
                for params in ({}, {"q": "1"}, {"refuse": "1"}):
                    r = await client.get("/direct", params=params)
                    answers.append((r.status_code, r.text, r.headers.get("x-probe")))
        assert answers[:3] == answers[3:]


def _solved(app: FastAPI) -> FastAPI:
    """``app`` with the direct route's handler put back to FastAPI's own."""
    direct = route(app, "/direct")
    plain: Callable[..., Any] = APIRoute.get_route_handler(direct)
    direct.app = request_response(plain)
    return app
