"""Secrets are masked in the activity log's row and the access log's line alike, by the
documented list of names matched whatever their case and separators, and inside URLs
(docs/activity-log.md, "Secrets"); query_params is capped as data is."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.iam.activity_log.recorder import MAX_DATA_CHARS
from tests.factories import Landscape, auth, landscape

SELLERS = "/iam/admin/sellers"
ACCESS = "cloudadmin.access"
SECRET = "s3cr3t-value"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def only_entry(session: AsyncSession) -> ActivityLogEntry:
    [entry] = (await session.execute(select(ActivityLogEntry))).scalars().all()
    await session.commit()
    return entry


def access_line(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    [record] = [r for r in caplog.records if r.name == ACCESS]
    return record


@pytest.mark.parametrize(
    "name",
    [
        "api-key",
        "x-api-key",
        "X-API-KEY",
        "apiKey",
        "auth",
        "Authorization",
        "credential",
        "aws_credentials",
        "password",
        "client.secret",
        "access token",
        "key",
    ],
)
async def test_a_secret_query_parameter_is_masked_in_both_logs(
    client: httpx.AsyncClient,
    session: AsyncSession,
    ls: Landscape,
    caplog: pytest.LogCaptureFixture,
    name: str,
):
    with caplog.at_level(logging.INFO, logger=ACCESS):
        r = await client.get(
            SELLERS, params={name: SECRET, "limit": "5"}, headers=auth(ls.reseller)
        )
    # Refused (the list takes no such parameter), and logged with the secret masked.
    assert r.status_code == 400, r.text
    entry = await only_entry(session)
    assert dict(parse_qsl(entry.query_params)) == {name: "***", "limit": "5"}
    line = access_line(caplog)
    assert SECRET not in line.getMessage() and SECRET not in line.path  # type: ignore[attr-defined]
    assert "%2A%2A%2A" in line.path  # type: ignore[attr-defined]


async def test_an_amqp_password_with_a_raw_space_is_masked_in_the_body(
    client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
):
    await client.post(
        "/cloud/v1/user_actions/subscribe_amqp",
        json={"connection_string": f"amqp://svc:pa {SECRET}@mq.example:5672/v"},
        headers=auth(ls.client_admin),
    )
    entry = await only_entry(session)
    assert SECRET not in entry.data
    assert json.loads(entry.data)["connection_string"] == "amqp://svc:***@mq.example:5672/v"


async def test_an_amqp_password_with_a_raw_space_is_masked_in_the_query(
    client: httpx.AsyncClient,
    session: AsyncSession,
    ls: Landscape,
    caplog: pytest.LogCaptureFixture,
):
    with caplog.at_level(logging.INFO, logger=ACCESS):
        await client.get(
            SELLERS,
            params={"next": f"amqp://svc:pa {SECRET}@mq.example:5672/v"},
            headers=auth(ls.reseller),
        )
    entry = await only_entry(session)
    assert SECRET not in entry.query_params
    assert dict(parse_qsl(entry.query_params)) == {"next": "amqp://svc:***@mq.example:5672/v"}
    assert SECRET not in access_line(caplog).getMessage()


async def get_raw(app: Any, path: str, query: bytes, token: str) -> int:
    """A GET as a server hands it over: httpx refuses URLs this long, servers may not."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": [(b"host", b"testserver"), (b"authorization", f"apikey {token}".encode())],
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
    return int(sent[0]["status"])


async def test_query_params_is_capped_as_data_is(app: Any, session: AsyncSession, ls: Landscape):
    # A long query whose secret comes last: capped after masking, it is not shown.
    query = "a=" + "x" * (MAX_DATA_CHARS + 1000) + f"&password={SECRET}"
    assert await get_raw(app, SELLERS, query.encode(), ls.reseller) == 400  # unknown names
    entry = await only_entry(session)
    assert len(entry.query_params) == MAX_DATA_CHARS
    assert entry.query_params == query[:MAX_DATA_CHARS]
