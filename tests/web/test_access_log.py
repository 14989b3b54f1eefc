"""One access-log line per request (logger cloudadmin.access): method, route template,
status, duration, request id (the activity-log row's), the caller's account, user and
key; secret query parameters masked; no terminal control characters, in JSON or text."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import LogFormat, Settings
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.logs import JsonFormatter, log_config
from tests.factories import Landscape, auth, landscape

ACCESS = "cloudadmin.access"
USER = "/iam/users/{userId}"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def access_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == ACCESS]


class TestAccessLine:
    async def test_one_line_with_the_caller_and_the_rows_request_id(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        caplog: pytest.LogCaptureFixture,
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            r = await client.get(f"/iam/users/{ls.admin_user.id}", headers=auth(ls.client_admin))
        assert r.status_code == 200, r.text
        [record] = access_records(caplog)
        line: Any = record
        row = (await session.execute(select(ActivityLogEntry))).scalar_one()
        assert line.request_id == r.headers["x-request-id"] == row.request_id
        assert (line.method, line.route, line.status) == ("GET", USER, 200)
        assert line.path == f"/iam/users/{ls.admin_user.id}"
        assert (line.client_id, line.user_id, line.token_id) == (
            row.client_id,
            row.user_id,
            row.token_id,
        )
        assert line.client_id == ls.client_account.id
        assert line.remote_ip == "203.0.113.7"
        assert line.duration_ms > 0

    async def test_the_callers_request_id_is_kept(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            r = await client.get("/healthz", headers={"X-Request-ID": "lb-1234.abc"})
        assert r.headers["x-request-id"] == "lb-1234.abc"
        [record] = access_records(caplog)
        assert record.request_id == "lb-1234.abc"  # type: ignore[attr-defined]
        assert record.client_id is None  # type: ignore[attr-defined]

    async def test_a_refused_key_has_no_caller(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            r = await client.get("/iam/users/1", headers=auth("1_wrong"))
        [record] = access_records(caplog)
        line: Any = record
        assert (line.status, line.route, line.user_id, line.token_id) == (401, USER, None, None)
        assert line.request_id == r.headers["x-request-id"]

    async def test_secret_query_parameters_are_masked(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            await client.get("/healthz?password=hunter2&page=2&api_key=k1")
        [record] = access_records(caplog)
        assert record.path == (
            "/healthz?password=%2A%2A%2A&page=2"  # type: ignore[attr-defined]
            "&api_key=%2A%2A%2A"
        )
        assert "hunter2" not in record.getMessage() and "k1" not in record.getMessage()

    async def test_a_body_refused_before_routing_is_logged(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, settings: Settings
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            r = await client.post(
                "/iam/admin/sellers",
                content=b"x" * (settings.max_json_body_bytes + 1),
                headers={"Content-Type": "application/json"},
            )
        assert r.status_code == 413
        [record] = access_records(caplog)
        assert record.status == 413  # type: ignore[attr-defined]
        assert record.request_id == r.headers["x-request-id"]  # type: ignore[attr-defined]


async def call_raw(app: FastAPI, path: str) -> None:
    """A request as a server would pass it, with a path that was percent-decoded into
    control characters (no raw_path)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("203.0.113.7", 1),
        "server": ("testserver", 80),
        "root_path": "",
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 404


def formatted(settings: Settings, fmt: LogFormat, record: logging.LogRecord) -> str:
    config = log_config(settings.model_copy(update={"log_format": fmt}))
    spec = dict(config["formatters"]["default"])
    formatter = JsonFormatter() if "()" in spec else logging.Formatter(spec["format"])
    return formatter.format(record)


class TestFormats:
    async def test_json_is_one_object_without_control_characters(
        self, app: FastAPI, settings: Settings, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            await call_raw(app, "/x\x1b[2J\x1b[31mred")
        [record] = access_records(caplog)
        line = formatted(settings, LogFormat.json, record)
        assert "\n" not in line and "\x1b" not in line
        parsed = json.loads(line)
        assert parsed["logger"] == ACCESS and parsed["route"] == "unmatched"
        assert parsed["status"] == 404 and parsed["method"] == "GET"
        assert {"request_id", "duration_ms", "client_id", "user_id", "token_id"} <= set(parsed)

    async def test_text_escapes_control_characters(
        self, app: FastAPI, settings: Settings, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.INFO, logger=ACCESS):
            await call_raw(app, "/x\x1b[31mred")
        [record] = access_records(caplog)
        line = formatted(settings, LogFormat.text, record)
        assert "\x1b" not in line
        assert '"GET /x\\x1b[31mred" 404' in line
        assert f"request_id={record.request_id}" in line  # type: ignore[attr-defined]


class TestUvicornsAccessLog:
    def test_is_silenced_not_written_twice(self, settings: Settings):
        logger = log_config(settings)["loggers"]["uvicorn.access"]
        assert logger["handlers"] == [] and logger["propagate"] is False

    def test_uvicorns_colour_copy_of_a_message_is_left_out(self):
        record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "up", None, None)
        record.color_message = "\x1b[1mup\x1b[0m"
        assert "color_message" not in json.loads(JsonFormatter().format(record))
