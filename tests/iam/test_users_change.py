"""PATCH /iam/users/{userId} (the provider's PutUser, partial) and the resellers'
DELETE /iam/users/{userId}."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import User
from tests.factories import auth, make_key, make_user
from tests.iam.accounts_helpers import events, fresh
from tests.iam.users_helpers import USER_KEYS, Cast, authenticates, cast


@pytest.fixture
async def c(session: AsyncSession) -> Cast:
    return await cast(session)


def url(user_id: int) -> str:
    return f"/iam/users/{user_id}"


class TestPatchUser:
    async def test_member_updates_itself(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        me = c.ls.member_user
        r = await client.patch(
            url(me.id),
            headers=auth(c.ls.client_member),
            json={
                "name": "Mia Member",
                "phone": "+49 30 1234",
                "lang": "de",
                "auth_types": ["password", "sso"],
            },
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == USER_KEYS
        assert (got["name"], got["phone"], got["lang"]) == ("Mia Member", "+49 30 1234", "de")
        assert got["auth_types"] == ["password", "sso"]
        stored = await fresh(session, User, me.id)
        assert (stored.name, stored.lang, stored.auth_types) == (
            "Mia Member",
            "de",
            ["password", "sso"],
        )

    async def test_absent_fields_are_untouched_and_null_clears(
        self, client: httpx.AsyncClient, c: Cast
    ):
        me = c.ls.member_user
        await client.patch(
            url(me.id), headers=auth(c.ls.client_member), json={"name": "Mia", "phone": "123"}
        )
        r = await client.patch(url(me.id), headers=auth(c.ls.client_member), json={"phone": None})
        assert r.status_code == 200
        assert r.json()["name"] == "Mia" and r.json()["phone"] is None

    async def test_read_only_fields_sent_along_are_ignored(
        self, client: httpx.AsyncClient, c: Cast
    ):
        me = c.ls.member_user
        r = await client.patch(
            url(me.id),
            headers=auth(c.ls.client_member),
            json={
                "id": 5,
                "deleted": True,
                "user_type": "reseller",
                "is_active": False,
                "groups": [{"id": 1, "name": "Administrators"}],
                "client": 1,
                "name": "Mia",
            },
        )
        assert r.status_code == 200
        got = r.json()
        assert got["id"] == me.id and got["deleted"] is False and got["is_active"] is True
        assert got["groups"] == [{"id": 2, "name": "Users"}]

    async def test_changing_the_email(self, client: httpx.AsyncClient, c: Cast):
        r = await client.patch(
            url(c.ls.member_user.id),
            headers=auth(c.ls.client_admin),
            json={"email": "mia@shop.example"},
        )
        assert r.status_code == 200
        assert r.json()["email"] == "mia@shop.example"
        # Its own address in another letter case is not "taken".
        r = await client.patch(
            url(c.ls.member_user.id),
            headers=auth(c.ls.client_member),
            json={"email": "MIA@shop.example"},
        )
        assert r.status_code == 200
        assert r.json()["email"] == "MIA@shop.example"

    async def test_taken_email_is_409(self, client: httpx.AsyncClient, c: Cast):
        taken = c.foreign_admin.email.upper()
        r = await client.patch(
            url(c.ls.member_user.id), headers=auth(c.ls.client_member), json={"email": taken}
        )
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"
        assert list(r.json()["errors"]) == ["email"]

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("email", "not-an-email"),
            ("email", None),
            ("email", "a" * 250 + "@x.example"),
            ("lang", "fr"),
            ("lang", None),
            ("name", "x" * 256),
            ("phone", "1" * 51),
            ("auth_types", ["password", "password"]),
            ("auth_types", ["kerberos"]),
            ("auth_types", None),
        ],
    )
    async def test_invalid_value_is_400_naming_the_field(
        self,
        client: httpx.AsyncClient,
        c: Cast,
        session: AsyncSession,
        field: str,
        value: object,
    ):
        r = await client.patch(
            url(c.ls.member_user.id),
            headers=auth(c.ls.client_member),
            json={field: value, "name": "Changed"} if field != "name" else {field: value},
        )
        assert r.status_code == 400
        assert r.json()["exception_class"] == "ValidationError"
        # An item of a list is named with its index (auth_types.0).
        assert [name.split(".")[0] for name in r.json()["errors"]] == [field]
        assert (await fresh(session, User, c.ls.member_user.id)).name is None

    async def test_explicit_null_is_refused_naming_the_field(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        # Left out, a field is kept; sent as null, it gets the error of a wrong type.
        r = await client.patch(
            url(c.ls.member_user.id),
            headers=auth(c.ls.client_member),
            json={"email": None, "lang": None, "auth_types": None},
        )
        assert r.status_code == 400
        assert r.json()["errors"] == {
            "email": ["Input should be a valid string."],
            "lang": ["Input should be 'de', 'en', 'ru', 'zh' or 'az'."],
            "auth_types": ["Input should be a valid list."],
        }
        stored = await fresh(session, User, c.ls.member_user.id)
        assert stored.email == c.ls.member_user.email and stored.lang == c.ls.member_user.lang

    async def test_client_administrator_updates_a_user_of_its_account(
        self, client: httpx.AsyncClient, c: Cast
    ):
        r = await client.patch(
            url(c.ls.member_user.id), headers=auth(c.ls.client_admin), json={"name": "By admin"}
        )
        assert r.status_code == 200 and r.json()["name"] == "By admin"

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_reseller_and_operator_update_a_user_of_the_client(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        r = await client.patch(
            url(c.ls.admin_user.id), headers=auth(getattr(c.ls, who)), json={"lang": "zh"}
        )
        assert r.status_code == 200 and r.json()["lang"] == "zh"

    async def test_member_may_not_update_another_user(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        r = await client.patch(
            url(c.ls.admin_user.id), headers=auth(c.ls.client_member), json={"name": "Hijacked"}
        )
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"
        assert (await fresh(session, User, c.ls.admin_user.id)).name is None

    @pytest.mark.parametrize("who", ["client_admin", "reseller"])
    async def test_only_an_operator_updates_an_operators_user(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        r = await client.patch(
            url(c.boss.id),
            headers=auth(getattr(c.ls, who)),
            json={"email": "taken-over@example.com"},
        )
        assert r.status_code == 403
        r = await client.patch(url(c.boss.id), headers=auth(c.ls.operator), json={"name": "B"})
        assert r.status_code == 200

    async def test_other_tenants_get_404(self, client: httpx.AsyncClient, c: Cast):
        for token, target in [
            (c.ls.other_reseller, c.ls.member_user.id),
            (c.foreign_key, c.ls.admin_user.id),
            (c.ls.client_admin, c.foreign_admin.id),
            (c.ls.client_admin, c.reseller_user.id),
            (c.ls.reseller, c.gone.id),
            (c.ls.reseller, 999999),
        ]:
            r = await client.patch(url(target), headers=auth(token), json={"name": "x"})
            assert r.status_code == 404, (token, target)
            assert r.json()["message"] == "User not found."

    async def test_one_event_with_the_changed_fields_only(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        me = c.ls.member_user
        await client.patch(
            url(me.id), headers=auth(c.ls.client_admin), json={"name": "New", "lang": "en"}
        )  # lang is already en
        await client.patch(url(me.id), headers=auth(c.ls.client_admin), json={"name": "New"})
        found = await events(session)
        assert len(found) == 1
        event = found[0]
        assert (event["action_type"], event["api_group"]) == ("update", "user")
        assert event["resources"] == [{"resource_id": str(me.id), "resource_type": "user"}]
        assert event["action_data"] == {"name": "New"}
        assert event["client_id"] == c.ls.client_account.id
        assert event["user_id"] == c.ls.admin_user.id


class TestDeleteUser:
    async def test_reseller_deletes_a_user_of_its_client(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        assert await authenticates(client, c.ls.client_member)
        r = await client.delete(url(c.ls.member_user.id), headers=auth(c.ls.reseller))
        assert r.status_code == 200, r.text
        assert r.content == b""
        assert (await fresh(session, User, c.ls.member_user.id)).deleted is True
        # Its keys stop authenticating; it is gone from reads.
        assert not await authenticates(client, c.ls.client_member)
        got = await client.get(url(c.ls.member_user.id), headers=auth(c.ls.reseller))
        assert got.status_code == 404
        listed = (await client.get("/iam/users", headers=auth(c.ls.client_admin))).json()
        assert c.ls.member_user.id not in [u["id"] for u in listed["results"]]

    async def test_operator_deletes_any_user(self, client: httpx.AsyncClient, c: Cast):
        r = await client.delete(url(c.foreign_admin.id), headers=auth(c.ls.operator))
        assert r.status_code == 200
        assert not await authenticates(client, c.foreign_key)

    async def test_reseller_deletes_another_user_of_its_own_account(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        peer = await make_user(session, c.ls.reseller_account)
        await session.commit()
        r = await client.delete(url(peer.id), headers=auth(c.ls.reseller))
        assert r.status_code == 200

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_clients_are_forbidden_whatever_the_id(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        for target in (c.ls.member_user.id, 999999):
            r = await client.delete(url(target), headers=auth(getattr(c.ls, who)))
            assert r.status_code == 403
            assert r.json()["exception_class"] == "PermissionDenied"

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_nobody_deletes_itself(self, client: httpx.AsyncClient, c: Cast, who: str):
        me = c.reseller_user if who == "reseller" else c.operator_user
        token = getattr(c.ls, who)
        r = await client.delete(url(me.id), headers=auth(token))
        assert r.status_code == 403
        assert r.json()["message"] == "You cannot do this to your own user."
        assert await authenticates(client, token)

    async def test_a_reseller_cannot_delete_an_operators_user(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        r = await client.delete(url(c.boss.id), headers=auth(c.ls.reseller))
        assert r.status_code == 403
        assert (await fresh(session, User, c.boss.id)).deleted is False

    async def test_other_tenants_and_deleted_users_get_404(
        self, client: httpx.AsyncClient, c: Cast
    ):
        for token, target in [
            (c.ls.other_reseller, c.ls.member_user.id),
            (c.ls.reseller, c.foreign_admin.id),
            (c.ls.reseller, c.gone.id),
            (c.ls.operator, c.gone.id),
            (c.ls.reseller, 999999),
        ]:
            r = await client.delete(url(target), headers=auth(token))
            assert r.status_code == 404, (token, target)
            assert r.json()["message"] == "User not found."

    async def test_bad_id_is_400(self, client: httpx.AsyncClient, c: Cast):
        r = await client.delete(url(0), headers=auth(c.ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["userId"]

    async def test_concurrent_deletions_exactly_one_wins(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        first, second = await asyncio.gather(
            client.delete(url(c.ls.member_user.id), headers=auth(c.ls.reseller)),
            client.delete(url(c.ls.member_user.id), headers=auth(c.ls.operator)),
        )
        assert sorted([first.status_code, second.status_code]) == [200, 404]
        deletions = [e for e in await events(session) if e["action_type"] == "delete"]
        assert len(deletions) == 1

    async def test_a_deleted_user_cannot_be_patched(self, client: httpx.AsyncClient, c: Cast):
        await client.delete(url(c.ls.member_user.id), headers=auth(c.ls.reseller))
        r = await client.patch(
            url(c.ls.member_user.id), headers=auth(c.ls.client_admin), json={"name": "late"}
        )
        assert r.status_code == 404
        assert r.json()["message"] == "User not found."

    async def test_deletion_records_one_event(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        key = await make_key(session, c.ls.admin_user)
        await session.commit()
        await client.delete(url(c.ls.admin_user.id), headers=auth(c.ls.reseller))
        found = await events(session)
        assert [(e["action_type"], e["api_group"]) for e in found] == [("delete", "user")]
        assert found[0]["resources"] == [
            {"resource_id": str(c.ls.admin_user.id), "resource_type": "user"}
        ]
        assert not await authenticates(client, key)
