"""Every request is in the activity log, whatever bytes it carries (activity-log.md,
"What is stored of hostile input"): each kind of bad byte adds exactly one row for
the caller, and the answer is never a 5xx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry
from tests.factories import Landscape, auth, landscape

SELLERS = "/iam/admin/sellers"
LOG = "/iam/activity_log/requests"
JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def rows_of(session: AsyncSession, ls: Landscape) -> list[ActivityLogEntry]:
    rows = (
        (
            await session.execute(
                select(ActivityLogEntry)
                .where(ActivityLogEntry.client_id == ls.reseller_account.id)
                .order_by(ActivityLogEntry.id)
                .execution_options(populate_existing=True)
            )
        )
        .scalars()
        .all()
    )
    await session.commit()
    return list(rows)


# (case, method, url, raw body or None, expected status)
BAD_BYTES: list[tuple[str, str, str, bytes | None, int]] = [
    ("NUL in path (percent-encoded)", "GET", f"{SELLERS}/1%00", None, 400),
    ("NUL in a path parameter", "GET", f"{SELLERS}/%00", None, 400),
    ("NUL in query value", "GET", f"{LOG}?path=a%00b", None, 400),
    ("NUL in query name", "GET", f"{LOG}?a%00b=1", None, 400),
    (
        "NUL in body",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "a\\u0000b"}',
        400,
    ),
    (
        "lone surrogate in body, checked field",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "a\\ud800"}',
        400,
    ),
    (
        "lone surrogate in body, ignored field",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "S", "note": "\\udc00"}',
        400,
    ),
    (
        "lone surrogate as raw UTF-8 bytes",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "S", "note": "\xed\xb0\x80"}',
        400,
    ),
    (
        "invalid UTF-8 in body",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "\xff\xfe"}',
        400,
    ),
    (
        "NUL byte in body",
        "POST",
        SELLERS,
        b'{"email": "n@sales.example", "full_name": "a\x00b"}',
        400,
    ),
    ("malformed JSON", "POST", SELLERS, b'{"email": ', 400),
]


class TestEveryBadByteIsLogged:
    @pytest.mark.parametrize(
        ("method", "url", "content", "status"),
        [c[1:] for c in BAD_BYTES],
        ids=[c[0] for c in BAD_BYTES],
    )
    async def test_one_row_for_the_caller(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        method: str,
        url: str,
        content: bytes | None,
        status: int,
    ):
        before = await rows_of(session, ls)
        r = await client.request(
            method, url, content=content, headers={**auth(ls.reseller), **JSON}
        )
        assert r.status_code == status, r.text
        after = await rows_of(session, ls)
        assert len(after) == len(before) + 1, (r.status_code, r.text)
        row = after[-1]
        assert row.status_code == status and row.reverted is True
        assert row.method == method


class TestWhatIsStored:
    async def test_nul_in_the_path_is_replaced(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.get(f"{SELLERS}/1%00", headers=auth(ls.reseller))
        [row] = await rows_of(session, ls)
        assert row.path == f"{SELLERS}/1\ufffd"

    async def test_the_query_string_is_kept_as_received(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.get(f"{LOG}?path=a%00b", headers=auth(ls.reseller))
        [row] = await rows_of(session, ls)
        assert row.query_params == "path=a%00b"

    async def test_body_escapes_are_kept_as_json(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        raw = b'{"full_name": "a\\u0000b", "note": "\\ud800"}'
        await client.post(SELLERS, content=raw, headers={**auth(ls.reseller), **JSON})
        [row] = await rows_of(session, ls)
        assert "\\u0000" in row.data and "\\ud800" in row.data
        assert json.loads(row.data) == {"full_name": "a\x00b", "note": "\ud800"}

    async def test_an_unparsable_body_is_described(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        raw = b'{"full_name": "\xff"}'
        await client.post(SELLERS, content=raw, headers={**auth(ls.reseller), **JSON})
        [row] = await rows_of(session, ls)
        assert row.data == f"<unparsable body of {len(raw)} bytes>"

    async def test_a_request_with_an_invalid_key_is_not_logged(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        key_id = ls.reseller.split("_")[0]
        r = await client.post(
            SELLERS, content=b'{"email": ', headers={**auth(f"{key_id}_wrong"), **JSON}
        )
        assert r.status_code == 400
        assert await rows_of(session, ls) == []

    async def test_a_nul_host_header_is_replaced(
        self, app: Any, session: AsyncSession, ls: Landscape
    ):
        # Servers refuse NUL in headers; an ASGI caller can still send one.
        scope_headers = [
            (b"host", b"te\x00st"),
            (b"authorization", f"apikey {ls.reseller}".encode()),
        ]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": LOG,
            "raw_path": LOG.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": scope_headers,
            "client": ("203.0.113.7", 1),
            "server": ("testserver", 80),
        }
        await app(scope, receive, send)
        assert sent[0]["status"] == 200
        [row] = await rows_of(session, ls)
        assert row.host == "te\ufffdst"
