"""GET, PUT and DELETE /iam/clients/{clientId}/client-users/{userId}: a user's group in
an account, its change, and the revocation of the user's access."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import User
from tests.factories import auth, make_user
from tests.iam.accounts_helpers import events, fresh
from tests.iam.users_helpers import Cast, authenticates, cast


@pytest.fixture
async def c(session: AsyncSession) -> Cast:
    return await cast(session)


def url(client_id: int, user_id: int) -> str:
    return f"/iam/clients/{client_id}/client-users/{user_id}"


ENGINEERS = {"user_role": {"id": 5, "name": "Engineers"}}
# An account the caller does not see is a missing account; a user not (or no longer) in
# the account the caller sees is a missing user.
NOT_FOUND = {"Account not found.", "User is not found in the specified account."}


class TestGetGroup:
    @pytest.mark.parametrize("who", ["client_admin", "client_member", "reseller", "operator"])
    async def test_everyone_who_sees_the_account_reads_a_group(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        r = await client.get(
            url(c.ls.client_account.id, c.ls.member_user.id), headers=auth(getattr(c.ls, who))
        )
        assert r.status_code == 200, r.text
        assert r.json() == {"user_role": {"id": 2, "name": "Users"}}

    async def test_a_user_in_no_group_has_no_user_role(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        loner = await make_user(session, c.ls.client_account, groups=())
        await session.commit()
        r = await client.get(url(c.ls.client_account.id, loner.id), headers=auth(c.ls.client_admin))
        assert r.status_code == 200
        assert r.json() == {}

    async def test_other_tenants_and_other_accounts_users_get_404(
        self, client: httpx.AsyncClient, c: Cast
    ):
        account = c.ls.client_account.id
        for token, client_id, user_id in [
            (c.ls.other_reseller, account, c.ls.member_user.id),
            (c.foreign_key, account, c.ls.member_user.id),
            (c.ls.client_admin, c.foreign.id, c.foreign_admin.id),
            # A user the caller sees, but of another account than the path's.
            (c.ls.reseller, account, c.reseller_user.id),
            (c.ls.operator, account, c.foreign_admin.id),
            (c.ls.client_admin, account, c.gone.id),
            (c.ls.client_admin, account, 999999),
            (c.ls.reseller, 999999, c.ls.member_user.id),
        ]:
            r = await client.get(url(client_id, user_id), headers=auth(token))
            assert r.status_code == 404, (token, client_id, user_id)
            assert r.json()["message"] in NOT_FOUND

    @pytest.mark.parametrize(
        ("client_id", "user_id", "field"),
        [("0", "1", "clientId"), ("1", "x", "userId"), ("2147483648", "1", "clientId")],
    )
    async def test_bad_ids_are_400(
        self, client: httpx.AsyncClient, c: Cast, client_id: str, user_id: str, field: str
    ):
        r = await client.get(
            f"/iam/clients/{client_id}/client-users/{user_id}", headers=auth(c.ls.client_admin)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]


class TestChangeGroup:
    @pytest.mark.parametrize("who", ["client_admin", "reseller", "operator"])
    async def test_the_user_is_then_in_exactly_that_group(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession, who: str
    ):
        r = await client.put(
            url(c.ls.client_account.id, c.ls.member_user.id),
            json=ENGINEERS,
            headers=auth(getattr(c.ls, who)),
        )
        assert r.status_code == 204, r.text
        assert r.content == b""
        assert (await fresh(session, User, c.ls.member_user.id)).group_ids == {5}
        got = await client.get(
            url(c.ls.client_account.id, c.ls.member_user.id), headers=auth(c.ls.client_member)
        )
        assert got.json() == ENGINEERS

    async def test_promoted_member_becomes_a_client_administrator(
        self, client: httpx.AsyncClient, c: Cast
    ):
        target = url(c.ls.client_account.id, c.ls.admin_user.id)
        assert (
            await client.put(target, json=ENGINEERS, headers=auth(c.ls.client_member))
        ).status_code == 403
        await client.put(
            url(c.ls.client_account.id, c.ls.member_user.id),
            json={"user_role": {"id": 1, "name": "Administrators"}},
            headers=auth(c.ls.client_admin),
        )
        # The member's key now carries the Administrators role.
        r = await client.put(target, json=ENGINEERS, headers=auth(c.ls.client_member))
        assert r.status_code == 204

    async def test_reseller_changes_a_user_of_its_own_account(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        peer = await make_user(session, c.ls.reseller_account)
        await session.commit()
        r = await client.put(
            url(c.ls.reseller_account.id, peer.id), json=ENGINEERS, headers=auth(c.ls.reseller)
        )
        assert r.status_code == 204

    @pytest.mark.parametrize(
        "role",
        [
            {"id": 100, "name": "Fake role"},
            {"id": 1, "name": "Users"},
            {"id": 5},
            {"id": 2**40, "name": "Users"},
        ],
    )
    async def test_wrong_role_is_400(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession, role: dict[str, object]
    ):
        r = await client.put(
            url(c.ls.client_account.id, c.ls.member_user.id),
            json={"user_role": role},
            headers=auth(c.ls.client_admin),
        )
        assert r.status_code == 400
        assert [k.split(".")[0] for k in r.json()["errors"]] == ["user_role"]
        assert (await fresh(session, User, c.ls.member_user.id)).group_ids == {2}

    @pytest.mark.parametrize("body", [{}, {"user_role": None}, {"user_role": "Engineers"}])
    async def test_missing_or_malformed_body_is_400(
        self, client: httpx.AsyncClient, c: Cast, body: dict[str, object]
    ):
        r = await client.put(
            url(c.ls.client_account.id, c.ls.member_user.id),
            json=body,
            headers=auth(c.ls.client_admin),
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["user_role"]

    async def test_member_is_forbidden(self, client: httpx.AsyncClient, c: Cast):
        r = await client.put(
            url(c.ls.client_account.id, c.ls.member_user.id),
            json=ENGINEERS,
            headers=auth(c.ls.client_member),
        )
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"

    async def test_nobody_changes_its_own_group(self, client: httpx.AsyncClient, c: Cast):
        r = await client.put(
            url(c.ls.client_account.id, c.ls.admin_user.id),
            json=ENGINEERS,
            headers=auth(c.ls.client_admin),
        )
        assert r.status_code == 403
        r = await client.put(
            url(c.ls.reseller_account.id, c.reseller_user.id),
            json=ENGINEERS,
            headers=auth(c.ls.reseller),
        )
        assert r.status_code == 403

    @pytest.mark.parametrize("who", ["client_admin", "reseller"])
    async def test_only_an_operator_changes_an_operators_user(
        self, client: httpx.AsyncClient, c: Cast, who: str
    ):
        target = url(c.ls.client_account.id, c.boss.id)
        assert (
            await client.put(target, json=ENGINEERS, headers=auth(getattr(c.ls, who)))
        ).status_code == 403
        assert (
            await client.put(target, json=ENGINEERS, headers=auth(c.ls.operator))
        ).status_code == 204

    async def test_other_tenants_get_404(self, client: httpx.AsyncClient, c: Cast):
        account = c.ls.client_account.id
        for token, client_id, user_id in [
            (c.ls.other_reseller, account, c.ls.member_user.id),
            (c.foreign_key, account, c.ls.member_user.id),
            (c.ls.client_admin, c.foreign.id, c.foreign_admin.id),
            (c.ls.client_member, c.foreign.id, c.foreign_admin.id),
            (c.ls.reseller, account, c.foreign_admin.id),
            (c.ls.client_admin, account, c.gone.id),
        ]:
            r = await client.put(url(client_id, user_id), json=ENGINEERS, headers=auth(token))
            assert r.status_code == 404, (token, client_id, user_id)
            assert r.json()["message"] in NOT_FOUND

    async def test_one_event_per_real_change(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        target = url(c.ls.client_account.id, c.ls.member_user.id)
        await client.put(target, json=ENGINEERS, headers=auth(c.ls.client_admin))
        await client.put(target, json=ENGINEERS, headers=auth(c.ls.client_admin))
        found = await events(session)
        assert [(e["action_type"], e["api_group"]) for e in found] == [("update", "client_user")]
        assert found[0]["action_data"] == {"user_role": {"id": 5, "name": "Engineers"}}
        assert found[0]["resources"] == [
            {"resource_id": str(c.ls.member_user.id), "resource_type": "user"}
        ]


class TestRevokeAccess:
    @pytest.mark.parametrize("who", ["client_admin", "reseller", "operator"])
    async def test_revoking_the_only_account_deletes_the_user(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession, who: str
    ):
        assert await authenticates(client, c.ls.client_member)
        r = await client.delete(
            url(c.ls.client_account.id, c.ls.member_user.id), headers=auth(getattr(c.ls, who))
        )
        assert r.status_code == 200, r.text
        assert r.content == b""
        assert (await fresh(session, User, c.ls.member_user.id)).deleted is True
        assert not await authenticates(client, c.ls.client_member)
        again = await client.get(
            url(c.ls.client_account.id, c.ls.member_user.id), headers=auth(c.ls.client_admin)
        )
        assert again.status_code == 404

    async def test_member_is_forbidden(self, client: httpx.AsyncClient, c: Cast):
        r = await client.delete(
            url(c.ls.client_account.id, c.ls.admin_user.id), headers=auth(c.ls.client_member)
        )
        assert r.status_code == 403
        assert await authenticates(client, c.ls.client_admin)

    async def test_nobody_revokes_itself(self, client: httpx.AsyncClient, c: Cast):
        r = await client.delete(
            url(c.ls.client_account.id, c.ls.admin_user.id), headers=auth(c.ls.client_admin)
        )
        assert r.status_code == 403
        assert await authenticates(client, c.ls.client_admin)

    async def test_only_an_operator_revokes_an_operators_user(
        self, client: httpx.AsyncClient, c: Cast
    ):
        target = url(c.ls.client_account.id, c.boss.id)
        assert (await client.delete(target, headers=auth(c.ls.client_admin))).status_code == 403
        assert (await client.delete(target, headers=auth(c.ls.reseller))).status_code == 403

    async def test_other_tenants_get_404(self, client: httpx.AsyncClient, c: Cast):
        account = c.ls.client_account.id
        for token, client_id, user_id in [
            (c.ls.other_reseller, account, c.ls.member_user.id),
            (c.foreign_key, account, c.ls.member_user.id),
            (c.ls.client_admin, c.foreign.id, c.foreign_admin.id),
            (c.ls.reseller, account, c.reseller_user.id),
            (c.ls.client_admin, account, c.gone.id),
        ]:
            r = await client.delete(url(client_id, user_id), headers=auth(token))
            assert r.status_code == 404, (token, client_id, user_id)
            assert r.json()["message"] in NOT_FOUND

    async def test_bad_id_is_400(self, client: httpx.AsyncClient, c: Cast):
        r = await client.delete(
            f"/iam/clients/{c.ls.client_account.id}/client-users/0", headers=auth(c.ls.client_admin)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["userId"]

    async def test_concurrent_revocations_exactly_one_wins(
        self, client: httpx.AsyncClient, c: Cast, session: AsyncSession
    ):
        target = url(c.ls.client_account.id, c.ls.member_user.id)
        first, second = await asyncio.gather(
            client.delete(target, headers=auth(c.ls.client_admin)),
            client.delete(target, headers=auth(c.ls.reseller)),
        )
        assert sorted([first.status_code, second.status_code]) == [200, 404]
        found = await events(session)
        assert [(e["action_type"], e["api_group"]) for e in found] == [("delete", "client_user")]
