"""web/route_index.py says once, in the log, when it steps aside for the whole route
table, and says nothing while it does its work."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import Host, Router

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web import route_index
from cloudadmin.web.route_index import RouteIndex

LOGGER = "cloudadmin.web.route_index"


def said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def probe_app() -> FastAPI:
    app = FastAPI()

    @app.get("/items/{item_id}")
    async def item(item_id: int) -> dict[str, int]:
        return {"id": item_id}

    return app


async def ask(app: FastAPI, *paths: str) -> list[int]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
        return [(await client.get(path)).status_code for path in paths]


class TestAtWork:
    def test_the_services_table_is_indexed_without_a_word(self, caplog: pytest.LogCaptureFixture):
        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            app = create_app(Settings())
        assert isinstance(app.router.middleware_stack, RouteIndex)
        assert said(caplog) == []

    async def test_requests_are_answered_without_a_word(self, caplog: pytest.LogCaptureFixture):
        app = probe_app()
        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            route_index.install(app.router)
            assert await ask(app, "/items/1", "/items/x", "/nowhere") == [200, 422, 404]
        assert said(caplog) == []


class TestSteppingAside:
    def test_is_said_at_start(self, caplog: pytest.LogCaptureFixture):
        app = probe_app()
        app.router.routes.append(Host("other.example", app=Router()))
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            route_index.install(app.router)
        [record] = said(caplog)
        assert record.levelno == logging.WARNING
        assert "route index off" in record.getMessage()
        assert "Host" in record.getMessage()

    async def test_is_said_once_however_many_requests(self, caplog: pytest.LogCaptureFixture):
        app = probe_app()
        app.router.routes.append(Host("other.example", app=Router()))
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            route_index.install(app.router)
            assert await ask(app, "/items/1", "/items/2", "/items/1") == [200, 200, 200]
        assert len(said(caplog)) == 1

    async def test_is_said_when_such_a_route_comes_later(self, caplog: pytest.LogCaptureFixture):
        app = probe_app()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            route_index.install(app.router)
            assert await ask(app, "/items/1") == [200]
            assert said(caplog) == []
            app.router.routes.insert(0, Host("other.example", app=Router()))
            assert await ask(app, "/items/2", "/items/3") == [200, 200]
        assert len(said(caplog)) == 1
