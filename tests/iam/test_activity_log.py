"""Activity log (operation 12): recording and listing."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.db.types import utcnow
from tests.factories import Landscape, auth, landscape

URL = "/iam/activity_log/requests"
SELLERS = "/iam/admin/sellers"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def entries(session: AsyncSession) -> list[ActivityLogEntry]:
    return list(
        (await session.execute(select(ActivityLogEntry).order_by(ActivityLogEntry.id))).scalars()
    )


async def log_of(client: httpx.AsyncClient, token: str, **params: object) -> dict:
    r = await client.get(URL, params=params, headers=auth(token))
    assert r.status_code == 200, r.text
    return r.json()


class TestRecording:
    async def test_success_is_recorded_with_every_field(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(
            SELLERS,
            json={"email": "s@x.example", "full_name": "S"},
            headers={**auth(ls.reseller), "X-Request-ID": "req-1"},
        )
        assert r.status_code == 200
        [entry] = await entries(session)
        assert entry.method == "POST"
        assert entry.path == SELLERS
        assert entry.query_params == ""
        assert entry.status_code == 200
        assert entry.reverted is False
        assert entry.token_id == int(ls.reseller.split("_")[0])
        assert entry.client_id == ls.reseller_account.id
        assert entry.remote_ip_address == "203.0.113.7"
        assert entry.host == "testserver"
        assert entry.request_id == "req-1"
        assert entry.actions == "create_seller"
        assert json.loads(entry.data) == {"email": "s@x.example", "full_name": "S"}

    async def test_secrets_are_redacted(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        body = {
            "email": "s@x.example",
            "full_name": "S",
            "password": "hunter2",
            "privateSettings": {"mailServer": {"password": "mail-pw", "host": "smtp"}},
            "connection_string": "amqp://user:broker-pw@mq.example:5672/vh",
            "api_key": "1_topsecret",
        }
        await client.post(SELLERS, json=body, headers=auth(ls.reseller))
        [entry] = await entries(session)
        for secret in ("hunter2", "mail-pw", "broker-pw", "topsecret"):
            assert secret not in entry.data
        data = json.loads(entry.data)
        assert data["password"] == "***"
        assert data["privateSettings"]["mailServer"] == {"password": "***", "host": "smtp"}
        assert data["connection_string"] == "amqp://user:***@mq.example:5672/vh"

    async def test_failed_request_is_recorded_as_reverted(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        body = {"email": "dup@x.example", "full_name": "S"}
        await client.post(SELLERS, json=body, headers=auth(ls.reseller))
        r = await client.post(SELLERS, json=body, headers=auth(ls.reseller))
        assert r.status_code == 409
        first, second = await entries(session)
        assert (first.status_code, first.reverted) == (200, False)
        assert (second.status_code, second.reverted) == (409, True)

    @pytest.mark.parametrize(("path", "status"), [(f"{SELLERS}/999", 404), (f"{SELLERS}/x", 400)])
    async def test_handler_errors_are_recorded(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        path: str,
        status: int,
    ):
        assert (await client.get(path, headers=auth(ls.reseller))).status_code == status
        [entry] = await entries(session)
        assert entry.status_code == status and entry.reverted is True

    async def test_unauthenticated_requests_are_not_recorded(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.get(URL)
        await client.get(URL, headers={"Authorization": "apikey 1_nope"})
        assert await entries(session) == []

    async def test_one_row_per_request(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        for _ in range(5):
            await client.get(f"{SELLERS}/1", headers=auth(ls.reseller))
        assert (await session.execute(select(func.count(ActivityLogEntry.id)))).scalar() == 5


class TestListing:
    async def test_newest_first_with_envelope(self, client: httpx.AsyncClient, ls: Landscape):
        for i in range(3):
            await client.get(f"{SELLERS}/{i + 1}", headers=auth(ls.reseller))
        page = await log_of(client, ls.reseller)
        assert page["next"] is None and page["previous"] is None  # null at the ends
        assert page["count"] == 3
        assert [r["path"] for r in page["result"]] == [
            f"{SELLERS}/3",
            f"{SELLERS}/2",
            f"{SELLERS}/1",
        ]
        rec = page["result"][0]
        assert set(rec) == {
            "id",
            "actions",
            "data",
            "user_email",
            "client",
            "token",
            "requested_at",
            "path",
            "remote_ip_address",
            "host",
            "method",
            "query_params",
            "status_code",
            "reverted",
            "user",
        }

    async def test_pages_with_absolute_links_keeping_params(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        for i in range(5):
            await client.get(f"{SELLERS}/{i + 1}", headers=auth(ls.reseller))
        # Filtered to the 404s: the listing requests are logged too and would shift pages.
        first = await log_of(client, ls.reseller, limit=2, status_code="404")
        assert first["count"] == 5 and len(first["result"]) == 2
        nxt = urlsplit(first["next"])
        assert nxt.scheme == "http" and nxt.netloc == "testserver"
        assert parse_qs(nxt.query) == {"limit": ["2"], "offset": ["2"], "status_code": ["404"]}
        second = (await client.get(first["next"], headers=auth(ls.reseller))).json()
        assert {r["id"] for r in second["result"]}.isdisjoint({r["id"] for r in first["result"]})
        assert parse_qs(urlsplit(second["previous"]).query) == {
            "limit": ["2"],
            "status_code": ["404"],
        }
        last = await log_of(client, ls.reseller, limit=2, offset=4, status_code="404")
        assert last["next"] is None and len(last["result"]) == 1

    async def test_filters(self, client: httpx.AsyncClient, ls: Landscape):
        await client.get(f"{SELLERS}/1", headers=auth(ls.client_admin))  # 403
        await client.get(f"{SELLERS}/1", headers=auth(ls.client_member))  # 403
        await client.get(URL, headers=auth(ls.client_admin))  # 200
        admin_key = int(ls.client_admin.split("_")[0])
        assert (await log_of(client, ls.client_admin, status_code="4"))["count"] == 2
        assert (await log_of(client, ls.client_admin, status_code="403"))["count"] == 2
        assert (await log_of(client, ls.client_admin, status_code="2"))["count"] >= 1
        assert (await log_of(client, ls.client_admin, path=URL))["count"] >= 1
        assert (await log_of(client, ls.client_admin, method="get"))["count"] >= 3
        assert (await log_of(client, ls.client_admin, method="POST"))["count"] == 0
        assert (await log_of(client, ls.client_admin, token_id=admin_key, status_code=4))[
            "count"
        ] == 1
        assert (await log_of(client, ls.client_admin, user_id=ls.member_user.id))["count"] == 1
        assert (await log_of(client, ls.client_admin, remote_ip_address="203.0.113.7"))[
            "count"
        ] >= 3
        assert (await log_of(client, ls.client_admin, remote_ip_address="10.0.0.1"))["count"] == 0
        future = (utcnow() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        past = (utcnow() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
        assert (await log_of(client, ls.client_admin, min_requested_at=future))["count"] == 0
        assert (await log_of(client, ls.client_admin, max_requested_at=past))["count"] == 0
        assert (await log_of(client, ls.client_admin, min_requested_at=past))["count"] >= 3

    @pytest.mark.parametrize(
        ("param", "value"),
        [
            ("status_code", "abc"),
            ("status_code", "6"),
            ("min_requested_at", "yesterday"),
            ("limit", "1001"),
            ("offset", "-1"),
            ("user_id", "x"),
        ],
    )
    async def test_bad_filter_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, param: str, value: str
    ):
        r = await client.get(URL, params={param: value}, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [param]

    async def test_400_names_parameters_in_their_documented_order(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        # The page and the filters are two dependencies; the page's come first, as in
        # the OpenAPI parameters.
        bad = {"max_requested_at": "x", "method": "1", "offset": "-1", "limit": "0"}
        r = await client.get(URL, params=bad, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["limit", "offset", "method", "max_requested_at"]


class TestScoping:
    async def _traffic(self, client: httpx.AsyncClient, ls: Landscape) -> None:
        for token in (
            ls.operator,
            ls.reseller,
            ls.other_reseller,
            ls.client_admin,
            ls.client_member,
        ):
            await client.get(f"{SELLERS}/1", headers=auth(token))

    async def test_member_sees_only_own_requests(self, client: httpx.AsyncClient, ls: Landscape):
        await self._traffic(client, ls)
        page = await log_of(client, ls.client_member)
        assert {r["user"] for r in page["result"]} == {ls.member_user.id}

    async def test_admin_sees_whole_account(self, client: httpx.AsyncClient, ls: Landscape):
        await self._traffic(client, ls)
        page = await log_of(client, ls.client_admin)
        assert {r["user"] for r in page["result"]} == {ls.member_user.id, ls.admin_user.id}
        assert {r["client"] for r in page["result"]} == {ls.client_account.id}

    async def test_reseller_sees_own_account_only(self, client: httpx.AsyncClient, ls: Landscape):
        await self._traffic(client, ls)
        page = await log_of(client, ls.reseller)
        assert {r["client"] for r in page["result"]} == {ls.reseller_account.id}

    async def test_operator_sees_all_and_filters_by_account(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        await self._traffic(client, ls)
        page = await log_of(client, ls.operator)
        assert page["count"] == 5
        one = await log_of(client, ls.operator, client_id=ls.client_account.id)
        assert one["count"] == 2

    async def test_client_id_filter_cannot_widen_scope(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        await self._traffic(client, ls)
        page = await log_of(client, ls.other_reseller, client_id=ls.client_account.id)
        assert page["count"] == 0
