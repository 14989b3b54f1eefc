"""Cloud users (operation 17)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.cloud.helpers import CloudLandscape, cloud_landscape
from tests.factories import auth, make_user

URL = "/cloud/v1/users"


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


class TestListCloudUsers:
    async def test_the_callers_account_users(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        named = await make_user(
            session,
            cl.ls.client_account,
            groups=(2,),
            name="Ann Example",
            activated=False,
            email="ann@shop.example",
        )
        await make_user(session, cl.ls.client_account, deleted=True)
        await session.commit()
        r = await client.get(URL, headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == {"count", "results"}
        # admin, member, engineer of the landscape plus the named user; not the deleted one
        assert got["count"] == 4
        ids = [u["id"] for u in got["results"]]
        assert ids == sorted(ids)
        by_id = {u["id"]: u for u in got["results"]}
        assert by_id[named.id] == {
            "activated": False,
            "email": "ann@shop.example",
            "id": named.id,
            "is_admin": False,
            "name": "Ann Example",
        }
        assert by_id[cl.ls.admin_user.id]["is_admin"] is True
        assert by_id[cl.ls.admin_user.id]["name"] == ""
        assert by_id[cl.ls.member_user.id]["is_admin"] is False
        for u in got["results"]:
            assert set(u) == {"activated", "email", "id", "is_admin", "name"}

    async def test_other_accounts_users_are_absent(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.get(URL, headers=auth(cl.foreign_admin))
        assert r.json()["count"] == 1
        r = await client.get(
            URL, params={"user_id": cl.ls.admin_user.id}, headers=auth(cl.foreign_admin)
        )
        assert r.json() == {"count": 0, "results": []}

    async def test_user_id_filter(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(
            URL, params={"user_id": cl.ls.member_user.id}, headers=auth(cl.ls.client_admin)
        )
        got = r.json()
        assert got["count"] == 1 and got["results"][0]["id"] == cl.ls.member_user.id

    async def test_limit_and_offset(self, client: httpx.AsyncClient, cl: CloudLandscape):
        everyone = (await client.get(URL, headers=auth(cl.ls.client_admin))).json()["results"]
        r = await client.get(
            URL, params={"limit": 1, "offset": 1}, headers=auth(cl.ls.client_admin)
        )
        got = r.json()
        assert got["count"] == 3
        assert got["results"] == everyone[1:2]

    @pytest.mark.parametrize(
        ("param", "value"),
        [("limit", 0), ("limit", 1001), ("offset", -1), ("user_id", "abc"), ("user_id", -1)],
    )
    async def test_bounds(
        self, client: httpx.AsyncClient, cl: CloudLandscape, param: str, value: object
    ):
        r = await client.get(URL, params={param: value}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [param]

    async def test_limit_1000_allowed(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(URL, params={"limit": 1000}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 200

    @pytest.mark.parametrize("who", ["operator", "reseller", "client_member"])
    async def test_any_caller_sees_its_own_account(
        self, client: httpx.AsyncClient, cl: CloudLandscape, who: str
    ):
        r = await client.get(URL, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 200
        assert r.json()["count"] >= 1

    async def test_without_key_is_401(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(URL)
        assert r.status_code == 401
