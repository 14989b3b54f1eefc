"""API tokens: GET/POST /iam/clients/{clientId}/tokens, GET/DELETE …/tokens/{tokenId}
(docs/iam.md, "API tokens"; docs/access.md, "API tokens")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey, Group, User
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.types import utcnow
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape, make_client, make_key, make_user
from tests.iam.accounts_helpers import events, fresh

USERS = {"id": 2, "name": "Users"}
ADMINS = {"id": 1, "name": "Administrators"}
ENGINEERS = {"id": 5, "name": "Engineers"}


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def url(client_id: int, token_id: int | None = None) -> str:
    base = f"/iam/clients/{client_id}/tokens"
    return base if token_id is None else f"{base}/{token_id}"


def body(**over: object) -> dict[str, object]:
    b: dict[str, object] = {
        "name": "CI",
        "description": "deploys",
        "exp_date": None,
        "client_user": {"role": USERS},
    }
    b.update(over)
    return b


async def issue(
    client: httpx.AsyncClient, token: str, client_id: int, **over: object
) -> dict[str, Any]:
    r = await client.post(url(client_id), json=body(**over), headers=auth(token))
    assert r.status_code == 200, r.text
    return dict(r.json())


def secret_of(token: str) -> str:
    return token.split("_", 1)[1]


async def set_key(session: AsyncSession, key_id: int, **values: object) -> None:
    await session.execute(update(ApiKey).where(ApiKey.id == key_id).values(**values))
    await session.commit()


@pytest.fixture
def key_updates(app: Any) -> Iterator[list[str]]:
    """UPDATE statements on api_keys sent through any connection of the app's engines."""
    seen: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE API_KEYS"):
            seen.append(statement)

    engine = app_state(app).engine.sync_engine
    event.listen(engine, "before_cursor_execute", listener)
    yield seen
    event.remove(engine, "before_cursor_execute", listener)


class TestCreateToken:
    async def test_admin_issues_a_token_that_authenticates_at_once(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        r = await client.post(url(cid), json=body(), headers=auth(ls.client_admin))
        assert r.status_code == 200, r.text
        got = r.json()
        token = got.pop("token")
        created = got.pop("created")
        assert got == {
            "id": got["id"],
            "name": "CI",
            "description": "deploys",
            "exp_date": None,
            "deleted": False,
            "expired": False,
            "client_user": {
                "deleted": False,
                "user_id": ls.admin_user.id,
                "user_name": ls.admin_user.email,
                "user_email": ls.admin_user.email,
                "client_id": cid,
                "role": USERS,
            },
        }
        assert created.endswith("Z")
        assert token.startswith(f"{got['id']}_") and len(secret_of(token)) >= 40
        key = await fresh(session, ApiKey, got["id"])
        assert secret_of(token) not in key.secret_hash
        assert (key.user_id, key.role_id, key.description) == (ls.admin_user.id, 2, "deploys")
        r = await client.get(url(cid, got["id"]), headers={"Authorization": f"APIKey {token}"})
        assert r.status_code == 200, r.text

    async def test_exp_date_is_kept(self, client: httpx.AsyncClient, ls: Landscape):
        got = await issue(
            client, ls.client_admin, ls.client_account.id, exp_date="2099-01-02T03:04:05.000000Z"
        )
        assert got["exp_date"] == "2099-01-02T03:04:05Z"
        assert got["expired"] is False

    async def test_member_issues_its_own_token(self, client: httpx.AsyncClient, ls: Landscape):
        got = await issue(client, ls.client_member, ls.client_account.id)
        assert got["client_user"]["user_id"] == ls.member_user.id
        assert got["client_user"]["role"] == USERS

    @pytest.mark.parametrize(("who", "role"), [("client_admin", ADMINS), ("client_member", USERS)])
    async def test_without_a_role_the_token_takes_the_issuers(
        self, client: httpx.AsyncClient, ls: Landscape, who: str, role: dict[str, object]
    ):
        got = await issue(client, getattr(ls, who), ls.client_account.id, client_user={})
        assert got["client_user"]["role"] == role

    async def test_role_by_name_alone(self, client: httpx.AsyncClient, ls: Landscape):
        got = await issue(
            client,
            ls.client_admin,
            ls.client_account.id,
            client_user={"role": {"name": "Engineers"}},
        )
        assert got["client_user"]["role"] == ENGINEERS

    async def test_reseller_and_operator_issue_in_their_own_account(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        got = await issue(client, ls.reseller, ls.reseller_account.id, client_user={})
        assert got["client_user"]["role"] == ADMINS
        operator = await fresh(session, ApiKey, int(ls.operator.split("_")[0]))
        home = (await fresh(session, User, operator.user_id)).client_id
        await issue(client, ls.operator, home)

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_not_in_a_clients_account_403(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        r = await client.post(
            url(ls.client_account.id), json=body(), headers=auth(getattr(ls, who))
        )
        assert r.status_code == 403, r.text

    @pytest.mark.parametrize(
        ("who", "account"),
        [
            ("other_reseller", "client_account"),
            ("client_admin", "reseller_account"),
            ("client_member", "other_reseller_account"),
        ],
    )
    async def test_another_tenants_account_404(
        self, client: httpx.AsyncClient, ls: Landscape, who: str, account: str
    ):
        r = await client.post(
            url(getattr(ls, account).id), json=body(), headers=auth(getattr(ls, who))
        )
        assert r.status_code == 404, r.text
        assert r.json()["message"] == "Account not found."

    @pytest.mark.parametrize("role", [ADMINS, ENGINEERS])
    async def test_role_above_the_issuers_is_400(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        role: dict[str, object],
    ):
        r = await client.post(
            url(ls.client_account.id),
            json=body(client_user={"role": role}),
            headers=auth(ls.client_member),
        )
        assert r.status_code == 400, r.text
        assert r.json()["errors"] == {
            "client_user.role": [f"Can't create token with role {role['name']}"]
        }
        assert (
            await session.execute(select(ApiKey).where(ApiKey.user_id == ls.member_user.id))
        ).scalars().all().__len__() == 1
        await session.commit()

    async def test_a_users_token_of_an_admin_cannot_issue_an_admin_token(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        limited = (await issue(client, ls.client_admin, ls.client_account.id))["token"]
        r = await client.post(
            url(ls.client_account.id),
            json=body(client_user={"role": ADMINS}),
            headers=auth(limited),
        )
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == ["client_user.role"]

    @pytest.mark.parametrize(
        "role", [{"id": 100}, {"name": "Fake role"}, {"id": 1, "name": "Users"}, {"id": 0}]
    )
    async def test_invalid_role_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, role: dict[str, object]
    ):
        r = await client.post(
            url(ls.client_account.id),
            json=body(client_user={"role": role}),
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 400, r.text
        assert r.json()["errors"]["client_user.role"][0].startswith("Invalid role:")

    @pytest.mark.parametrize(
        ("over", "field"),
        [
            ({"name": ""}, "name"),
            ({"name": "n" * 256}, "name"),
            ({"name": None}, "name"),
            ({"description": "d" * 256}, "description"),
            ({"exp_date": "tomorrow"}, "exp_date"),
            ({"exp_date": "2020-01-01T00:00:00Z"}, "exp_date"),
            ({"client_user": "Users"}, "client_user"),
            ({"client_user": {"role": {"id": "x"}}}, "client_user.role.id"),
            ({"client_user": {"role": {"id": 2**31}}}, "client_user.role.id"),
        ],
    )
    async def test_invalid_body_is_400_naming_the_field(
        self, client: httpx.AsyncClient, ls: Landscape, over: dict[str, object], field: str
    ):
        r = await client.post(
            url(ls.client_account.id), json=body(**over), headers=auth(ls.client_admin)
        )
        assert r.status_code == 400, r.text
        assert field in r.json()["errors"], r.text

    @pytest.mark.parametrize("missing", ["name", "exp_date", "client_user"])
    async def test_required_fields(self, client: httpx.AsyncClient, ls: Landscape, missing: str):
        b = body()
        del b[missing]
        r = await client.post(url(ls.client_account.id), json=b, headers=auth(ls.client_admin))
        assert r.status_code == 400, r.text
        assert missing in r.json()["errors"]

    async def test_a_retry_with_the_same_idempotency_key_issues_once(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        headers = {**auth(ls.client_admin), "Idempotency-Key": "token-1"}
        first = await client.post(url(ls.client_account.id), json=body(), headers=headers)
        again = await client.post(url(ls.client_account.id), json=body(), headers=headers)
        assert first.status_code == again.status_code == 200
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()
        # The stored answer is kept encrypted: the database never holds the secret.
        [stored] = (await session.execute(select(IdempotencyKey.body))).scalars().all()
        await session.commit()
        assert stored is not None and secret_of(first.json()["token"]).encode() not in stored

    async def test_the_event_never_holds_the_token(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        got = await issue(client, ls.client_admin, ls.client_account.id)
        [made] = [e for e in await events(session) if e["api_group"] == "api_token"]
        assert made["action_type"] == "create"
        assert made["resources"] == [{"resource_id": str(got["id"]), "resource_type": "api_token"}]
        assert secret_of(got["token"]) not in str(made)


class TestListTokens:
    async def _two_tokens(
        self, client: httpx.AsyncClient, ls: Landscape
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        cid = ls.client_account.id
        return (
            await issue(client, ls.client_admin, cid, client_user={"role": ENGINEERS}),
            await issue(client, ls.client_member, cid, name="mine"),
        )

    @pytest.mark.parametrize("who", ["client_admin", "reseller", "operator"])
    async def test_every_token_of_the_account_without_secrets(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        admin_t, member_t = await self._two_tokens(client, ls)
        r = await client.get(url(ls.client_account.id), headers=auth(getattr(ls, who)))
        assert r.status_code == 200, r.text
        ids = [t["id"] for t in r.json()]
        # The landscape's own keys (made without a role) are tokens of the account too.
        assert admin_t["id"] in ids and member_t["id"] in ids
        assert all("token" not in t for t in r.json())
        for made in (admin_t, member_t):
            assert secret_of(made["token"]) not in r.text
        listed = next(t for t in r.json() if t["id"] == member_t["id"])
        assert listed == {k: v for k, v in member_t.items() if k != "token"}

    async def test_a_member_sees_only_its_own(self, client: httpx.AsyncClient, ls: Landscape):
        _, member_t = await self._two_tokens(client, ls)
        r = await client.get(url(ls.client_account.id), headers=auth(ls.client_member))
        assert r.status_code == 200, r.text
        assert {t["client_user"]["user_id"] for t in r.json()} == {ls.member_user.id}
        assert member_t["id"] in [t["id"] for t in r.json()]

    @pytest.mark.parametrize(
        ("who", "account"),
        [
            ("other_reseller", "client_account"),
            ("client_admin", "reseller_account"),
            ("client_member", "other_reseller_account"),
        ],
    )
    async def test_another_tenants_account_404(
        self, client: httpx.AsyncClient, ls: Landscape, who: str, account: str
    ):
        r = await client.get(url(getattr(ls, account).id), headers=auth(getattr(ls, who)))
        assert r.status_code == 404, r.text

    async def test_filters(self, client: httpx.AsyncClient, ls: Landscape):
        admin_t, member_t = await self._two_tokens(client, ls)
        cid, h = ls.client_account.id, auth(ls.client_admin)

        async def ids(**params: object) -> list[int]:
            r = await client.get(url(cid), params=params, headers=h)
            assert r.status_code == 200, r.text
            return [t["id"] for t in r.json()]

        assert await ids(role="Engineers") == [admin_t["id"]]
        assert await ids(role="5") == [admin_t["id"]]
        assert await ids(role="Users") == [member_t["id"]]
        assert await ids(role="Nobody") == []
        assert member_t["id"] in await ids(issued_by=ls.member_user.id)
        assert admin_t["id"] not in await ids(issued_by=ls.member_user.id)
        assert member_t["id"] not in await ids(not_issued_by=ls.member_user.id)
        assert admin_t["id"] in await ids(not_issued_by=ls.member_user.id)
        assert await ids(deleted="true") == []
        await client.delete(url(cid, admin_t["id"]), headers=h)
        assert await ids(deleted="true") == [admin_t["id"]]
        assert admin_t["id"] not in await ids()

    @pytest.mark.parametrize(
        "params",
        [
            {"issued_by": "abc"},
            {"issued_by": 2**31},
            {"not_issued_by": -1},
            {"deleted": "maybe"},
            {"role": "r" * 101},
        ],
    )
    async def test_invalid_query_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, params: dict[str, object]
    ):
        r = await client.get(
            url(ls.client_account.id), params=params, headers=auth(ls.client_admin)
        )
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == list(params)


class TestGetToken:
    @pytest.mark.parametrize("who", ["client_admin", "reseller", "operator", "client_member"])
    async def test_reads_a_token_without_its_secret(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        made = await issue(client, ls.client_member, ls.client_account.id)
        r = await client.get(url(ls.client_account.id, made["id"]), headers=auth(getattr(ls, who)))
        assert r.status_code == 200, r.text
        assert r.json() == {k: v for k, v in made.items() if k != "token"}
        assert secret_of(made["token"]) not in r.text

    async def test_a_member_reading_anothers_token_403(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        made = await issue(client, ls.client_admin, ls.client_account.id)
        r = await client.get(url(ls.client_account.id, made["id"]), headers=auth(ls.client_member))
        assert r.status_code == 403, r.text

    async def test_another_tenant_404(self, client: httpx.AsyncClient, ls: Landscape):
        made = await issue(client, ls.client_admin, ls.client_account.id)
        r = await client.get(url(ls.client_account.id, made["id"]), headers=auth(ls.other_reseller))
        assert r.status_code == 404, r.text

    async def test_a_token_of_another_account_under_ones_own_404(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        made = await issue(client, ls.reseller, ls.reseller_account.id)
        r = await client.get(url(ls.client_account.id, made["id"]), headers=auth(ls.client_admin))
        assert r.status_code == 404, r.text
        assert r.json()["message"] == "API token not found."

    @pytest.mark.parametrize(
        ("token_id", "status"), [("0", 400), ("abc", 400), (str(2**31), 400), ("999999", 404)]
    )
    async def test_bad_or_unknown_id(
        self, client: httpx.AsyncClient, ls: Landscape, token_id: str, status: int
    ):
        r = await client.get(
            f"{url(ls.client_account.id)}/{token_id}", headers=auth(ls.client_admin)
        )
        assert r.status_code == status, r.text


class TestDeleteToken:
    @pytest.mark.parametrize("who", ["client_admin", "reseller", "operator", "client_member"])
    async def test_deleted_token_is_refused_at_once(
        self, client: httpx.AsyncClient, ls: Landscape, who: str, session: AsyncSession
    ):
        cid = ls.client_account.id
        made = await issue(client, ls.client_member, cid)
        assert (
            await client.get(url(cid, made["id"]), headers=auth(made["token"]))
        ).status_code == 200
        r = await client.delete(url(cid, made["id"]), headers=auth(getattr(ls, who)))
        assert r.status_code == 204, r.text
        r = await client.get(url(cid, made["id"]), headers=auth(made["token"]))
        assert r.status_code == 401
        shown = (await client.get(url(cid, made["id"]), headers=auth(ls.client_admin))).json()
        assert shown["deleted"] is True and shown["client_user"]["deleted"] is True
        deleted = [e for e in await events(session) if e["action_type"] == "delete"]
        assert [e["resources"][0]["resource_id"] for e in deleted] == [str(made["id"])]

    async def test_a_member_deleting_anothers_token_403(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        made = await issue(client, ls.client_admin, ls.client_account.id)
        r = await client.delete(
            url(ls.client_account.id, made["id"]), headers=auth(ls.client_member)
        )
        assert r.status_code == 403, r.text
        r = await client.get(url(ls.client_account.id, made["id"]), headers=auth(made["token"]))
        assert r.status_code == 200

    @pytest.mark.parametrize(("who", "status"), [("other_reseller", 404), ("client_admin", 404)])
    async def test_another_tenants_token_404(
        self, client: httpx.AsyncClient, ls: Landscape, who: str, status: int
    ):
        made = await issue(client, ls.reseller, ls.reseller_account.id)
        r = await client.delete(
            url(ls.reseller_account.id, made["id"]), headers=auth(getattr(ls, who))
        )
        assert r.status_code == status, r.text
        r = await client.get(url(ls.reseller_account.id, made["id"]), headers=auth(made["token"]))
        assert r.status_code == 200


class TestExpiry:
    async def test_an_expired_token_is_refused_at_once(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        made = await issue(
            client, ls.client_admin, cid, exp_date=(utcnow() + timedelta(hours=1)).isoformat()
        )
        assert (await client.get(url(cid), headers=auth(made["token"]))).status_code == 200
        await set_key(session, made["id"], expires_at=utcnow() - timedelta(seconds=1))
        r = await client.get(url(cid), headers=auth(made["token"]))
        assert r.status_code == 401
        shown = (await client.get(url(cid, made["id"]), headers=auth(ls.client_admin))).json()
        assert shown["expired"] is True and shown["deleted"] is False


class TestLastUsage:
    async def test_written_at_most_once_a_minute(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        key_updates: list[str],
    ):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid, client_user={"role": ADMINS})
        assert "last_usage" not in made
        key_updates.clear()
        h = auth(made["token"])
        for _ in range(3):  # reads (autocommit) and changes (the request's transaction)
            assert (await client.get(url(cid), headers=h)).status_code == 200
            assert (
                await client.patch(f"/iam/clients/{cid}", json={}, headers=h)
            ).status_code == 200
        assert len(key_updates) == 1, key_updates
        first = (await fresh(session, ApiKey, made["id"])).last_usage
        assert first is not None and utcnow() - first < timedelta(minutes=1)
        shown = (await client.get(url(cid, made["id"]), headers=h)).json()
        assert shown["last_usage"].endswith("Z")

        # A minute later (the stored value moved back instead of waiting): one write.
        await set_key(session, made["id"], last_usage=first - timedelta(seconds=61))
        key_updates.clear()
        for _ in range(3):
            assert (await client.get(url(cid), headers=h)).status_code == 200
        assert len(key_updates) == 1, key_updates
        later = (await fresh(session, ApiKey, made["id"])).last_usage
        assert later is not None and later >= first

    async def test_a_change_request_notes_it_too(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        key_updates: list[str],
    ):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid, client_user={"role": ADMINS})
        key_updates.clear()
        r = await client.patch(f"/iam/clients/{cid}", json={}, headers=auth(made["token"]))
        assert r.status_code == 200
        assert len(key_updates) == 1
        assert (await fresh(session, ApiKey, made["id"])).last_usage is not None

    async def test_a_key_row_held_by_another_transaction_is_not_waited_for(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, dialect: str
    ):
        if dialect != "postgresql":
            pytest.skip("SQLite runs one writer at a time: nothing to hold the row alone")
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid, client_user={"role": ADMINS})
        # Another transaction holds the key's row (a DELETE of it, a change request
        # that noted its use) while its last_usage is due.
        await session.execute(update(ApiKey).where(ApiKey.id == made["id"]).values(last_usage=None))
        try:
            r = await asyncio.wait_for(client.get(url(cid), headers=auth(made["token"])), timeout=5)
            assert r.status_code == 200, r.text
        finally:
            await session.rollback()


class TestRoleLimits:
    async def test_a_users_token_of_an_admin_acts_as_a_member(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        cid = ls.client_account.id
        limited = (await issue(client, ls.client_admin, cid))["token"]
        full = (await issue(client, ls.client_admin, cid, client_user={"role": ADMINS}))["token"]
        assert (
            await client.patch(f"/iam/clients/{cid}", json={}, headers=auth(full))
        ).status_code == 200
        r = await client.patch(f"/iam/clients/{cid}", json={}, headers=auth(limited))
        assert r.status_code == 403, r.text
        # It sees the tokens its user issued, as a member would.
        listed = (await client.get(url(cid), headers=auth(limited))).json()
        assert {t["client_user"]["user_id"] for t in listed} == {ls.admin_user.id}

    async def test_an_operators_users_token_has_no_operator_rights(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        operator = await fresh(session, ApiKey, int(ls.operator.split("_")[0]))
        home = (await fresh(session, User, operator.user_id)).client_id
        limited = (await issue(client, ls.operator, home))["token"]
        other = ls.other_reseller_account.id
        assert (
            await client.patch(f"/iam/clients/{other}", json={}, headers=auth(ls.operator))
        ).status_code == 200
        r = await client.patch(f"/iam/clients/{other}", json={}, headers=auth(limited))
        assert r.status_code == 404, r.text

    async def test_a_role_its_user_no_longer_holds_gives_nothing(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        engineer = (await issue(client, ls.client_admin, cid, client_user={"role": ENGINEERS}))[
            "token"
        ]
        user = await session.get(User, ls.admin_user.id)
        assert user is not None
        user.groups = [await session.get(Group, 2)]  # type: ignore[list-item]
        await session.commit()
        r = await client.get(url(cid), headers=auth(engineer))
        assert r.status_code == 200
        assert {t["client_user"]["user_id"] for t in r.json()} == {ls.admin_user.id}
        r = await client.post(
            url(cid), json=body(client_user={"role": ENGINEERS}), headers=auth(engineer)
        )
        assert r.status_code == 400, r.text

    async def test_a_key_without_a_role_acts_with_its_users_groups(
        self, client: httpx.AsyncClient, session: AsyncSession
    ):
        account = await make_client(session)
        user = await make_user(session, account, groups=(1,))
        token = await make_key(session, user)  # as the CLI's `apikey create` makes it
        await session.commit()
        r = await client.patch(f"/iam/clients/{account.id}", json={}, headers=auth(token))
        assert r.status_code == 200, r.text
        listed = (await client.get(url(account.id), headers=auth(token))).json()
        assert len(listed) == 1 and listed[0]["client_user"]["role"] == ADMINS
        assert "name" not in listed[0] and "last_usage" in listed[0]
