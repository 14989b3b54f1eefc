"""GET /iam/users and GET /iam/users/{userId}: the provider's User and its page."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.factories import auth
from tests.iam.users_helpers import USER_KEYS, Cast, cast


@pytest.fixture
async def c(session: AsyncSession) -> Cast:
    return await cast(session)


class TestListUsers:
    async def test_client_administrator_gets_its_accounts_live_users(
        self, client: httpx.AsyncClient, c: Cast
    ):
        r = await client.get("/iam/users", headers=auth(c.ls.client_admin))
        assert r.status_code == 200, r.text
        page = r.json()
        # Without limit: every user, and both page links null.
        assert page["next"] is None and page["previous"] is None
        ids = [u["id"] for u in page["results"]]
        assert ids == sorted([c.ls.admin_user.id, c.ls.member_user.id, c.boss.id])
        assert page["count"] == 3
        assert c.gone.id not in ids
        for user in page["results"]:
            assert set(user) == USER_KEYS
            assert user["client"] == c.ls.client_account.id
            assert user["reseller"] == c.ls.reseller_account.id

    async def test_member_gets_the_same_list(self, client: httpx.AsyncClient, c: Cast):
        admin = await client.get("/iam/users", headers=auth(c.ls.client_admin))
        member = await client.get("/iam/users", headers=auth(c.ls.client_member))
        assert member.status_code == 200
        assert member.json() == admin.json()

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_resellers_and_operators_get_their_own_account_only(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        me = c.reseller_user if who == "reseller" else c.operator_user
        r = await client.get("/iam/users", headers=auth(getattr(c.ls, who)))
        assert r.status_code == 200
        assert [u["id"] for u in r.json()["results"]] == [me.id]

    async def test_the_user_fields(self, client: httpx.AsyncClient, c: Cast):
        r = await client.get("/iam/users", headers=auth(c.ls.client_member))
        member = next(u for u in r.json()["results"] if u["id"] == c.ls.member_user.id)
        assert member["groups"] == [{"id": 2, "name": "Users"}]
        assert member["client_and_roles"] == [
            {
                "client_id": c.ls.client_account.id,
                "client_company_name": c.ls.client_account.company_name,
                "user_roles": ["2"],
                "user_id": c.ls.member_user.id,
            }
        ]
        assert member["deleted"] is False and member["is_active"] is True
        assert member["user_type"] == "common"
        # Nullable in the provider's schema: present as null.
        assert member["name"] is None and member["phone"] is None

    async def test_pages_with_links(self, client: httpx.AsyncClient, c: Cast):
        first = (await client.get("/iam/users?limit=2", headers=auth(c.ls.client_admin))).json()
        assert first["count"] == 3 and len(first["results"]) == 2
        assert first["previous"] is None  # null at the ends, as DRF writes it
        assert first["next"] == "http://testserver/iam/users?limit=2&offset=2"
        last = (await client.get(first["next"], headers=auth(c.ls.client_admin))).json()
        assert len(last["results"]) == 1 and last["next"] is None
        assert last["previous"] == "http://testserver/iam/users?limit=2"
        ids = [u["id"] for u in first["results"] + last["results"]]
        assert len(set(ids)) == 3

    @pytest.mark.parametrize(
        "query", ["limit=0", "limit=1001", "limit=x", "offset=-1", "offset=9223372036854775808"]
    )
    async def test_bad_paging_is_400_naming_it(
        self, client: httpx.AsyncClient, c: Cast, query: str
    ):
        r = await client.get(f"/iam/users?{query}", headers=auth(c.ls.client_admin))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [query.split("=")[0]]

    async def test_without_a_key_is_401(self, client: httpx.AsyncClient, c: Cast):
        assert (await client.get("/iam/users")).status_code == 401


class TestGetUser:
    @pytest.mark.parametrize("who", ["client_admin", "client_member", "reseller", "operator"])
    async def test_everyone_reads_itself(self, client: httpx.AsyncClient, c: Cast, who: str):
        token = getattr(c.ls, who)
        listed = (await client.get("/iam/users", headers=auth(token))).json()["results"]
        mine = {
            "client_admin": c.ls.admin_user,
            "client_member": c.ls.member_user,
            "reseller": c.reseller_user,
            "operator": c.operator_user,
        }[who]
        r = await client.get(f"/iam/users/{mine.id}", headers=auth(token))
        assert r.status_code == 200
        assert r.json() == next(u for u in listed if u["id"] == mine.id)

    async def test_users_of_the_same_account_read_each_other(
        self, client: httpx.AsyncClient, c: Cast
    ):
        r = await client.get(f"/iam/users/{c.ls.admin_user.id}", headers=auth(c.ls.client_member))
        assert r.status_code == 200
        assert r.json()["groups"] == [{"id": 1, "name": "Administrators"}]

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_reseller_and_operator_read_a_users_of_the_client(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        r = await client.get(f"/iam/users/{c.ls.member_user.id}", headers=auth(getattr(c.ls, who)))
        assert r.status_code == 200
        assert r.json()["client"] == c.ls.client_account.id

    async def test_operator_reads_any_user(self, client: httpx.AsyncClient, c: Cast):
        r = await client.get(f"/iam/users/{c.foreign_admin.id}", headers=auth(c.ls.operator))
        assert r.status_code == 200
        assert r.json()["reseller"] == c.ls.other_reseller_account.id

    async def test_other_tenants_get_404_as_for_a_missing_user(
        self, client: httpx.AsyncClient, c: Cast
    ):
        missing = await client.get("/iam/users/999999", headers=auth(c.ls.reseller))
        assert missing.status_code == 404
        assert missing.json()["message"] == "User not found."
        for token, target in [
            (c.ls.other_reseller, c.ls.member_user.id),
            (c.foreign_key, c.ls.admin_user.id),
            (c.ls.client_admin, c.reseller_user.id),
            (c.ls.client_member, c.foreign_admin.id),
            (c.ls.reseller, c.foreign_admin.id),
            (c.ls.reseller, c.operator_user.id),
            (c.ls.operator, c.gone.id),
            (c.ls.client_admin, c.gone.id),
        ]:
            r = await client.get(f"/iam/users/{target}", headers=auth(token))
            assert r.status_code == 404, (token, target)
            assert r.json()["message"] == missing.json()["message"]

    @pytest.mark.parametrize("bad", ["0", "x", "2147483648", "-1"])
    async def test_bad_id_is_400(self, client: httpx.AsyncClient, c: Cast, bad: str):
        r = await client.get(f"/iam/users/{bad}", headers=auth(c.ls.client_admin))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["userId"]
