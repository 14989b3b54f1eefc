"""Bodies built to stall or break the service (docs/errors.md, "Nesting"; docs/activity-
log.md, "Secrets"): a JSON body nested deeper than max_json_depth is a 400 before
anything parses it, logged like any refused request and without a traceback; a body of
the worst pattern for secret masking costs work linear in what the log keeps."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry, User
from cloudadmin.iam.activity_log.recorder import MAX_DATA_CHARS
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def entries(session: AsyncSession) -> list[ActivityLogEntry]:
    rows = await session.execute(select(ActivityLogEntry).order_by(ActivityLogEntry.id))
    await session.commit()
    return list(rows.scalars())


def nested(depth: int, inner: Any = 1) -> Any:
    value = inner
    for _ in range(depth):
        value = [value]
    return value


def nested_text(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


async def patch_self(
    client: httpx.AsyncClient, ls: Landscape, *, body: Any = None, content: bytes | None = None
) -> httpx.Response:
    """A client member's PATCH of its own user: the request of the issue."""
    headers = {**auth(ls.client_member), "Content-Type": "application/json"}
    if body is not None:
        content = json.dumps(body).encode()
    return await client.patch(f"/iam/users/{ls.member_user.id}", content=content, headers=headers)


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


class TestNesting:
    async def test_the_limit_is_accepted(
        self, client: httpx.AsyncClient, ls: Landscape, settings: Settings
    ):
        # The body itself is the first level: an ignored field holds the rest.
        body = {"name": "Mia", "ignored": nested(settings.max_json_depth - 2)}
        r = await patch_self(client, ls, body=body)
        assert r.status_code == 200, r.text

    @pytest.mark.parametrize("depth", [1, 2, 480, 950, 970, 5_000, 400_000])
    async def test_deeper_is_a_400_naming_the_body(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        settings: Settings,
        caplog: pytest.LogCaptureFixture,
        depth: int,
    ):
        content = (
            b'{"name": "Changed", "ignored": '
            + nested_text(settings.max_json_depth - 1 + depth)
            + b"}"
        )
        with caplog.at_level(logging.INFO):
            r = await patch_self(client, ls, content=content)
        assert r.status_code == 400, r.text
        limit = settings.max_json_depth
        assert r.json() == {
            "exception_class": "ValidationError",
            "message": f"body: Arrays and objects may nest at most {limit} levels deep.",
            "request_id": r.headers["x-request-id"],
            "errors": {"body": [f"Arrays and objects may nest at most {limit} levels deep."]},
        }
        # Nothing was changed, and nothing was written about it but the log row.
        assert (await session.get(User, ls.member_user.id)).name != "Changed"  # type: ignore[union-attr]
        assert tracebacks(caplog) == []
        [row] = await entries(session)
        assert (row.status_code, row.reverted, row.actions) == (400, True, "update_user")
        assert row.user_id == ls.member_user.id
        # What is logged of the body: all but its part nested too deep, within the limit.
        assert len(row.data) <= MAX_DATA_CHARS
        data = json.loads(row.data)
        assert data["name"] == "Changed"
        assert json.dumps(data).count("[") == limit - 1
        assert f"<nested deeper than {limit} levels>" in row.data

    async def test_secrets_beside_the_deep_part_are_masked(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape, settings: Settings
    ):
        content = (
            b'{"ignored": '
            + nested_text(settings.max_json_depth * 4)
            + b', "password": "hunter2", "url": "amqp://u:broker-pw@mq.example/"}'
        )
        assert (await patch_self(client, ls, content=content)).status_code == 400
        [row] = await entries(session)
        assert "hunter2" not in row.data and "broker-pw" not in row.data
        assert json.loads(row.data)["url"] == "amqp://u:***@mq.example/"

    async def test_nesting_in_strings_does_not_count(
        self, client: httpx.AsyncClient, ls: Landscape, settings: Settings
    ):
        brackets = "[{" * settings.max_json_depth * 2 + '"\\'
        r = await patch_self(client, ls, body={"name": "Mia", "ignored": brackets})
        assert r.status_code == 200, r.text

    async def test_the_limit_is_a_setting(
        self, app: Any, session: AsyncSession, ls: Landscape, settings: Settings
    ):
        application = create_app(settings.model_copy(update={"max_json_depth": 4}))
        transport = httpx.ASGITransport(app=application, client=("203.0.113.7", 40000))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                r = await patch_self(c, ls, body={"ignored": nested(4)})
                assert r.status_code == 400
                assert r.json()["errors"] == {
                    "body": ["Arrays and objects may nest at most 4 levels deep."]
                }
                assert (await patch_self(c, ls, body={"ignored": nested(3)})).status_code == 200
        finally:
            await app_state(application).engine.dispose()
        first, _ = await entries(session)
        # The body is the first level: three of its arrays are kept.
        assert first.data == '{"ignored": [[["<nested deeper than 4 levels>"]]]}'


def worst_body(chars: int) -> bytes:
    """A JSON body of about ``chars`` bytes whose ignored field is the worst text for
    URL masking: every ``a://`` a URL whose password search ran to the end of the text."""
    pattern = "a://:@ "
    text = (pattern * (chars // len(pattern) + 1))[: chars - 64]
    return json.dumps({"name": "Mia", "ignored": text}).encode()


class TestMaskingWork:
    async def test_a_megabyte_of_the_worst_pattern_costs_what_the_log_keeps(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        settings: Settings,
    ):
        async def cpu_of(content: bytes) -> float:
            best = float("inf")
            for _ in range(3):
                started = time.process_time()
                r = await patch_self(client, ls, content=content)
                best = min(best, time.process_time() - started)
                assert r.status_code == 200, r.text
            return best

        # The log keeps 64 KiB: a megabyte (sixteen times as much) costs about what
        # 64 KiB does, plus parsing it; masking it whole would cost sixteen times as much
        # (and today's quadratic masking thousands of times).
        kept = await cpu_of(worst_body(MAX_DATA_CHARS))
        megabyte = await cpu_of(worst_body(settings.max_json_body_bytes))
        assert megabyte < 6 * kept, (kept, megabyte)
        rows = await entries(session)
        assert len(rows[-1].data) == MAX_DATA_CHARS
        assert ":@ " not in rows[-1].data  # every password, empty here, masked
