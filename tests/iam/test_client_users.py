"""POST /iam/clients/{clientId}/client-users/create: operation 3."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import User
from cloudadmin.kit.crypto import verify_password
from tests.factories import Landscape, auth, landscape, make_client, make_key, make_user
from tests.iam.accounts_helpers import STRONG_PASSWORD, events, users_with_email


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def url(client_id: int) -> str:
    return f"/iam/clients/{client_id}/client-users/create"


def body(**over: object) -> dict[str, object]:
    b: dict[str, object] = {
        "username": "engineer@shop.example",
        "password": STRONG_PASSWORD,
        "name": "Eve Engineer",
        "user_role": {"user_role": {"id": 5, "name": "Engineers"}},
    }
    b.update(over)
    return b


async def user_by_email(session: AsyncSession, email: str) -> User:
    stmt = select(User).where(User.email == email).execution_options(populate_existing=True)
    user = (await session.execute(stmt)).scalar_one()
    await session.commit()
    return user


class TestCreateClientUser:
    async def test_reseller_creates_a_user_in_its_client(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(url(ls.client_account.id), json=body(), headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        assert r.json() == {
            "name": "Eve Engineer",
            "username": "engineer@shop.example",
            "user_role": {"user_role": {"id": 5, "name": "Engineers"}},
        }
        assert STRONG_PASSWORD not in r.text
        user = await user_by_email(session, "engineer@shop.example")
        assert user.client_id == ls.client_account.id
        assert [g.id for g in user.groups] == [5]
        assert user.activated and user.is_active and not user.deleted
        assert user.user_type == "common"
        assert user.password_hash.startswith("$argon2id$")
        assert verify_password(user.password_hash, STRONG_PASSWORD)

    async def test_flat_user_role_is_accepted(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            url(ls.client_account.id),
            json=body(user_role={"id": 1, "name": "Administrators"}),
            headers=auth(ls.reseller),
        )
        assert r.status_code == 200, r.text
        assert r.json()["user_role"] == {"user_role": {"id": 1, "name": "Administrators"}}

    @pytest.mark.parametrize(
        ("group_id", "name"),
        [
            (1, "Administrators"),
            (2, "Users"),
            (5, "Engineers"),
            (3009, "Purge and Prefetch only (API+Web)"),
            (3022, "Purge and Prefetch only (API)"),
        ],
    )
    async def test_each_of_the_five_groups(
        self, client: httpx.AsyncClient, ls: Landscape, group_id: int, name: str
    ):
        r = await client.post(
            url(ls.client_account.id),
            json=body(user_role={"user_role": {"id": group_id, "name": name}}),
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 200, r.text
        assert r.json()["user_role"]["user_role"] == {"id": group_id, "name": name}

    async def test_the_new_user_authenticates_at_once(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.post(
            url(ls.client_account.id),
            json=body(user_role={"id": 1, "name": "Administrators"}),
            headers=auth(ls.reseller),
        )
        user = await user_by_email(session, "engineer@shop.example")
        token = await make_key(session, user)
        await session.commit()
        r = await client.patch(f"/iam/clients/{ls.client_account.id}", json={}, headers=auth(token))
        assert r.status_code == 200
        assert r.json()["currentUser"] == user.id

    @pytest.mark.parametrize(
        "role",
        [
            {"user_role": {"id": 100, "name": "Fake role"}},
            {"user_role": {"id": 1, "name": "Users"}},
            {"user_role": {"id": 1, "name": "administrators"}},
            {"id": 2, "name": "Engineers"},
        ],
    )
    async def test_wrong_role_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, role: object
    ):
        r = await client.post(
            url(ls.client_account.id), json=body(user_role=role), headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["user_role"]
        assert r.json()["errors"]["user_role"][0].startswith("Invalid role:")
        assert await users_with_email(session, "engineer@shop.example") == 0

    @pytest.mark.parametrize(
        ("over", "field"),
        [
            ({"username": "not-an-email"}, "username"),
            ({"username": "u" * 250 + "@example.com"}, "username"),
            ({"name": "n" * 256}, "name"),
            ({"user_role": {"user_role": {"id": "x", "name": "Users"}}}, "user_role.user_role.id"),
            ({"user_role": {"user_role": {"id": 2}}}, "user_role.user_role.name"),
            ({"user_role": "Users"}, "user_role"),
            ({"password": "password123"}, "password"),
            ({"password": "short"}, "password"),
        ],
    )
    async def test_invalid_body_is_400_naming_the_field(
        self, client: httpx.AsyncClient, ls: Landscape, over: dict[str, object], field: str
    ):
        r = await client.post(
            url(ls.client_account.id), json=body(**over), headers=auth(ls.reseller)
        )
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == [field]

    @pytest.mark.parametrize("field", ["username", "password", "user_role"])
    async def test_required_fields(self, client: httpx.AsyncClient, ls: Landscape, field: str):
        b = body()
        del b[field]
        r = await client.post(url(ls.client_account.id), json=b, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    async def test_name_is_optional_and_nullable(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            url(ls.client_account.id), json=body(name=None), headers=auth(ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["name"] is None

    async def test_taken_username_is_409(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        taken = ls.member_user.email.upper()
        r = await client.post(
            url(ls.client_account.id), json=body(username=taken), headers=auth(ls.reseller)
        )
        assert r.status_code == 409
        assert list(r.json()["errors"]) == ["username"]
        assert await users_with_email(session, taken) == 1

    async def test_concurrent_same_username_exactly_one_wins(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        first, second = await asyncio.gather(
            client.post(url(ls.client_account.id), json=body(), headers=auth(ls.reseller)),
            client.post(url(ls.client_account.id), json=body(), headers=auth(ls.client_admin)),
        )
        assert sorted([first.status_code, second.status_code]) == [200, 409]
        assert await users_with_email(session, "engineer@shop.example") == 1

    async def test_user_in_a_reseller_account_is_a_reseller_user(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(url(ls.reseller_account.id), json=body(), headers=auth(ls.reseller))
        assert r.status_code == 200
        assert (await user_by_email(session, "engineer@shop.example")).user_type == "reseller"


class TestAccess:
    async def test_operator_creates_in_any_account(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(url(ls.client_account.id), json=body(), headers=auth(ls.operator))
        assert r.status_code == 200

    async def test_client_member_is_forbidden(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            url(ls.client_account.id), json=body(), headers=auth(ls.client_member)
        )
        assert r.status_code == 403

    async def test_other_tenants_get_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        other = await make_client(session, reseller_id=ls.other_reseller_account.id)
        other_admin = await make_key(session, await make_user(session, other))
        gone = await make_client(session, reseller_id=ls.reseller_account.id, deleted=True)
        await session.commit()
        missing = await client.post(url(999999), json=body(), headers=auth(ls.reseller))
        assert missing.status_code == 404
        for token, target in [
            (ls.other_reseller, ls.client_account.id),
            (other_admin, ls.client_account.id),
            (ls.client_admin, other.id),
            (ls.client_member, other.id),
            (ls.reseller, gone.id),
        ]:
            r = await client.post(url(target), json=body(), headers=auth(token))
            assert r.status_code == 404
            assert r.json()["message"] == missing.json()["message"]

    async def test_without_a_key_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(url(ls.client_account.id), json=body())
        assert r.status_code == 401


class TestUserActions:
    async def test_creation_records_one_event_without_the_password(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.post(url(ls.client_account.id), json=body(), headers=auth(ls.client_admin))
        user = await user_by_email(session, "engineer@shop.example")
        found = await events(session)
        assert len(found) == 1
        event = found[0]
        assert event["action_type"] == "create" and event["api_group"] == "client_user"
        assert event["resources"] == [{"resource_id": str(user.id), "resource_type": "user"}]
        assert event["client_id"] == ls.client_account.id
        assert event["user_id"] == ls.admin_user.id
        assert event["action_data"]["username"] == "engineer@shop.example"
        assert STRONG_PASSWORD not in str(event)
