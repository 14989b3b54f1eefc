"""GET /iam/activity_log/requests/{id}: one logged request, seen as the list shows it."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry
from tests.factories import Landscape, auth, landscape

URL = "/iam/activity_log/requests"
SELLERS = "/iam/admin/sellers"
CALLERS = ("operator", "reseller", "other_reseller", "client_admin", "client_member")


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def logged(client: httpx.AsyncClient, session: AsyncSession, ls: Landscape) -> dict[str, int]:
    """One logged request per kind of caller: caller name -> entry id."""
    for name in CALLERS:
        await client.get(f"{SELLERS}/1", headers=auth(getattr(ls, name)))
    rows = (
        (await session.execute(select(ActivityLogEntry.id).order_by(ActivityLogEntry.id)))
        .scalars()
        .all()
    )
    await session.commit()
    return dict(zip(CALLERS, rows, strict=True))


# Whose requests each caller sees (access.md, "Activity log").
VISIBLE = {
    "operator": set(CALLERS),
    "reseller": {"reseller"},
    "other_reseller": {"other_reseller"},
    "client_admin": {"client_admin", "client_member"},
    "client_member": {"client_member"},
}


async def get(client: httpx.AsyncClient, token: str, entry_id: object) -> httpx.Response:
    return await client.get(f"{URL}/{entry_id}", headers=auth(token))


class TestGetRequest:
    async def test_the_entry_is_the_lists_entry(
        self, client: httpx.AsyncClient, ls: Landscape, logged: dict[str, int]
    ):
        r = await get(client, ls.client_admin, logged["client_member"])
        assert r.status_code == 200, r.text
        listed = (
            await client.get(URL, params={"limit": 1000}, headers=auth(ls.client_admin))
        ).json()["result"]
        [same] = [e for e in listed if e["id"] == logged["client_member"]]
        assert r.json() == same
        assert r.json()["user"] == ls.member_user.id
        assert r.json()["path"] == f"{SELLERS}/1" and r.json()["status_code"] == 403
        assert r.json()["reverted"] is True

    @pytest.mark.parametrize("caller", CALLERS)
    async def test_same_scope_as_the_list(
        self, client: httpx.AsyncClient, ls: Landscape, logged: dict[str, int], caller: str
    ):
        for whose, entry_id in logged.items():
            r = await get(client, getattr(ls, caller), entry_id)
            expected = 200 if whose in VISIBLE[caller] else 404
            assert r.status_code == expected, (whose, r.text)
            if expected == 404:
                assert r.json()["message"] == "Request not found."

    async def test_reading_an_entry_is_itself_logged(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        logged: dict[str, int],
        session: AsyncSession,
    ):
        await get(client, ls.reseller, logged["reseller"])
        last = (
            await session.execute(
                select(ActivityLogEntry).order_by(ActivityLogEntry.id.desc()).limit(1)
            )
        ).scalar_one()
        await session.commit()
        assert (last.actions, last.path) == (
            "get_activity_log_request",
            f"{URL}/{logged['reseller']}",
        )

    async def test_missing_id_is_404(self, client: httpx.AsyncClient, ls: Landscape):
        r = await get(client, ls.operator, 2**63 - 1)
        assert r.status_code == 404
        assert r.json()["message"] == "Request not found."

    @pytest.mark.parametrize("bad", ["x", "0", "-1", "1.5", str(2**63)])
    async def test_bad_id_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, bad: str
    ):
        r = await get(client, ls.operator, bad)
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["id"]


class TestOpenApi:
    async def test_documented_with_the_lists_item_schema(self, client: httpx.AsyncClient):
        doc = (await client.get("/openapi.json")).json()
        op = doc["paths"]["/iam/activity_log/requests/{id}"]["get"]
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ActivityLogRecord"}
