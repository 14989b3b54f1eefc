"""A repeated Idempotency-Key is no way around a check (docs/errors.md, "Idempotent
retries"): a repeat is answered only after every check the first request passed has
passed again, for the caller as it is now (authentication, role, the API token's role,
tenancy), and the stored answer goes only to the credential that made it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey, Branding, IdempotencyKey, NotificationSetting, User
from cloudadmin.db.models.accounts import user_groups
from cloudadmin.kit.crypto import hash_api_secret
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute
from tests.factories import Landscape, auth, landscape, make_client, make_user, next_id
from tests.iam.accounts_helpers import STRONG_PASSWORD, count

KEY = "7d1e5a0c-one-request"
ADMINISTRATORS, USERS = 1, 2


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    """The landscape; its reseller has a mail server, which an invitation needs (nothing
    is sent here: the mail waits in the outbox)."""
    ls = await landscape(session)
    session.add(
        Branding(
            reseller_id=ls.reseller_account.id,
            mail_server={"host": "127.0.0.1", "port": "2525", "tls": False, "login": ""},
        )
    )
    await session.commit()
    return ls


async def role_key(
    session: AsyncSession,
    user: User,
    role_id: int | None,
    *,
    expires_at: datetime | None = None,
) -> str:
    """A token of ``user`` acting with ``role_id`` (as POST …/tokens issues one)."""
    kid = next_id()
    secret = f"role-{role_id}-secret"
    session.add(
        ApiKey(
            id=kid,
            user_id=user.id,
            secret_hash=hash_api_secret(kid, secret),
            role_id=role_id,
            expires_at=expires_at,
        )
    )
    await session.commit()
    return f"{kid}_{secret}"


def with_key(token: str, key: str = KEY) -> dict[str, str]:
    return {**auth(token), "Idempotency-Key": key}


@dataclass
class Callers:
    """Who sends what in a case: tokens of the landscape and a few more."""

    ls: Landscape
    # The client administrator's token acting with the Users role.
    admin_as_users: str
    # A second token of the client administrator, acting as Administrators.
    admin_again: str
    # A second token of the reseller's user.
    reseller_again: str
    # The administrator of another client of the same reseller.
    other_client_admin: str


@pytest.fixture
async def callers(session: AsyncSession, ls: Landscape) -> Callers:
    reseller_user = (
        await session.execute(select(User).where(User.client_id == ls.reseller_account.id).limit(1))
    ).scalar_one()
    other_client = await make_client(session, reseller_id=ls.reseller_account.id)
    other_admin = await make_user(session, other_client, groups=(ADMINISTRATORS,))
    await session.commit()
    return Callers(
        ls=ls,
        admin_as_users=await role_key(session, ls.admin_user, USERS),
        admin_again=await role_key(session, ls.admin_user, ADMINISTRATORS),
        reseller_again=await role_key(session, reseller_user, None),
        other_client_admin=await role_key(session, other_admin, ADMINISTRATORS),
    )


@dataclass
class Keyed:
    """An operation that honours Idempotency-Key: a request of a caller allowed to make
    it, the callers refused it (each answered as without a key), and another credential
    that is allowed too (it must not get the first credential's answer)."""

    name: str
    path: Any  # (Landscape) -> str
    body: Any  # dict[str, object], or (Landscape) -> dict[str, object]
    allowed: str  # attribute of Callers or of its Landscape
    refused: tuple[str, ...]
    another_credential: str

    def body_for(self, ls: Landscape) -> dict[str, object]:
        return self.body(ls) if callable(self.body) else self.body


def token_of(c: Callers, name: str) -> str:
    return str(getattr(c, name) if hasattr(c, name) else getattr(c.ls, name))


CLIENT_USER = {
    "username": "engineer@shop.example",
    "password": STRONG_PASSWORD,
    "name": "Eve Engineer",
    "user_role": {"user_role": {"id": 5, "name": "Engineers"}},
}
TOKEN = {
    "name": "deploy",
    "exp_date": None,
    "client_user": {"role": {"id": ADMINISTRATORS, "name": "Administrators"}},
}

# Every operation that takes the header (test_the_table_is_every_keyed_operation).
KEYED = [
    Keyed(
        "users",
        lambda ls: "/iam/users",
        {
            "email": "owner@newshop.example",
            "password": STRONG_PASSWORD,
            "company": "New Shop Ltd",
            "name": "Olivia Owner",
        },
        "reseller",
        ("client_admin", "client_member"),
        "reseller_again",
    ),
    Keyed(
        "sellers",
        lambda ls: "/iam/admin/sellers",
        {"email": "jane@sales.example", "full_name": "Jane Seller"},
        "reseller",
        ("client_admin", "client_member"),
        "reseller_again",
    ),
    Keyed(
        "client users",
        lambda ls: f"/iam/clients/{ls.client_account.id}/client-users/create",
        CLIENT_USER,
        "client_admin",
        ("client_member", "admin_as_users", "other_client_admin"),
        "admin_again",
    ),
    Keyed(
        "api tokens",
        lambda ls: f"/iam/clients/{ls.client_account.id}/tokens",
        TOKEN,
        "client_admin",
        ("client_member", "admin_as_users", "other_client_admin"),
        "admin_again",
    ),
    Keyed(
        "api tokens v2",
        lambda ls: f"/iam/v2/clients/{ls.client_account.id}/tokens",
        TOKEN,
        "client_admin",
        ("client_member", "admin_as_users", "other_client_admin"),
        "admin_again",
    ),
    Keyed(
        "invitations",
        lambda ls: "/iam/clients/invite_user",
        lambda ls: {
            "email": "new.hire@shop.example",
            "user_role": {"id": 5, "name": "Engineers"},
            "client_id": ls.client_account.id,
        },
        "client_admin",
        ("client_member", "admin_as_users", "other_client_admin"),
        "admin_again",
    ),
    Keyed(
        "notification settings",
        lambda ls: f"/iam/reselling/resellers/{ls.reseller_account.id}/notification_settings",
        {"notification_type": "deletion_request", "email": "alerts@acme.example"},
        "reseller",
        ("other_reseller", "client_admin"),
        "reseller_again",
    ),
    Keyed(
        "amqp subscription",
        lambda ls: "/cloud/v1/user_actions/subscribe_amqp",
        {"connection_string": "amqps://events:s3cret@broker.example:5671/prod"},
        "client_admin",
        ("client_member", "admin_as_users"),
        "admin_again",
    ),
    Keyed(
        "webhook subscription",
        lambda ls: "/cloud/v1/user_actions/subscribe",
        {
            "url": "https://hooks.shop.example/user-actions",
            "auth_header_name": "Authorization",
            "auth_header_value": "Bearer wh-s3cret-value",
        },
        "client_admin",
        ("client_member", "admin_as_users"),
        "admin_again",
    ),
]
PATHS = {
    "users": "/iam/users",
    "sellers": "/iam/admin/sellers",
    "client users": "/iam/clients/{clientId}/client-users/create",
    "api tokens": "/iam/clients/{clientId}/tokens",
    "api tokens v2": "/iam/v2/clients/{clientId}/tokens",
    "invitations": "/iam/clients/invite_user",
    "notification settings": "/iam/reselling/resellers/{resellerId}/notification_settings",
    "amqp subscription": "/cloud/v1/user_actions/subscribe_amqp",
    "webhook subscription": "/cloud/v1/user_actions/subscribe",
}


def same_answer(keyed: httpx.Response, unkeyed: httpx.Response) -> None:
    """The same status and error, but for the request's own id."""

    def answer(r: httpx.Response) -> tuple[int, dict[str, Any]]:
        return r.status_code, {k: v for k, v in r.json().items() if k != "request_id"}

    assert answer(keyed) == answer(unkeyed)
    assert "Idempotent-Replayed" not in keyed.headers


async def test_the_table_is_every_keyed_operation(client: httpx.AsyncClient):
    spec = (await client.get("/openapi.json")).json()
    keyed = {
        (path, method)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if "Idempotency-Key" in {p["name"] for p in op.get("parameters", [])}
    }
    assert keyed == {(path, "post") for path in PATHS.values()}
    assert {op.name for op in KEYED} == set(PATHS)


@pytest.mark.parametrize("op", KEYED, ids=lambda op: op.name)
class TestEveryKeyedOperation:
    async def test_a_refused_caller_is_answered_as_without_the_key(
        self, client: httpx.AsyncClient, callers: Callers, op: Keyed
    ):
        path = op.path(callers.ls)
        first = await client.post(
            path, json=op.body_for(callers.ls), headers=with_key(token_of(callers, op.allowed))
        )
        assert first.status_code < 300, first.text
        for name in op.refused:
            token = token_of(callers, name)
            keyed = await client.post(path, json=op.body_for(callers.ls), headers=with_key(token))
            unkeyed = await client.post(path, json=op.body_for(callers.ls), headers=auth(token))
            assert unkeyed.status_code in (400, 403, 404), (name, unkeyed.text)
            same_answer(keyed, unkeyed)
            if first.content:
                assert keyed.content != first.content, name

    async def test_another_credential_never_gets_the_stored_answer(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers, op: Keyed
    ):
        path = op.path(callers.ls)
        first = await client.post(
            path, json=op.body_for(callers.ls), headers=with_key(token_of(callers, op.allowed))
        )
        assert first.status_code < 300, first.text
        other = await client.post(
            path,
            json=op.body_for(callers.ls),
            headers=with_key(token_of(callers, op.another_credential)),
        )
        assert other.status_code == 422, other.text
        assert "Idempotency-Key" in other.json()["message"]
        assert "Idempotent-Replayed" not in other.headers

    async def test_the_same_credential_still_gets_it(
        self, client: httpx.AsyncClient, callers: Callers, op: Keyed
    ):
        path, token = op.path(callers.ls), token_of(callers, op.allowed)
        first = await client.post(path, json=op.body_for(callers.ls), headers=with_key(token))
        again = await client.post(path, json=op.body_for(callers.ls), headers=with_key(token))
        assert first.status_code < 300, first.text
        assert (again.status_code, again.content) == (first.status_code, first.content)
        assert again.headers["Idempotent-Replayed"] == "true"


class TestTheIssuesScenario:
    """A client administrator's Users-role token repeats an administrator's request."""

    async def test_no_administrators_token_for_a_users_token(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers
    ):
        path = f"/iam/clients/{callers.ls.client_account.id}/tokens"
        first = await client.post(path, json=TOKEN, headers=with_key(callers.ls.client_admin))
        assert first.status_code == 200, first.text
        assert first.json()["client_user"]["role"]["name"] == "Administrators"
        secret = first.json()["token"].split("_", 1)[1]
        tokens = await count(session, ApiKey)

        keyed = await client.post(path, json=TOKEN, headers=with_key(callers.admin_as_users))
        unkeyed = await client.post(path, json=TOKEN, headers=auth(callers.admin_as_users))
        same_answer(keyed, unkeyed)
        assert keyed.status_code == 400
        assert "client_user.role" in keyed.json()["errors"]
        assert "token" not in keyed.json() and secret not in keyed.text
        assert await count(session, ApiKey) == tokens

    async def test_without_a_role_in_the_body_the_users_token_gets_422(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers
    ):
        # The body names no role: the administrator's token made an Administrators token,
        # the Users token would make a Users token. The key does not hand over the first.
        path = f"/iam/clients/{callers.ls.client_account.id}/tokens"
        body = {"name": "deploy", "exp_date": None, "client_user": {}}
        first = await client.post(path, json=body, headers=with_key(callers.ls.client_admin))
        assert first.json()["client_user"]["role"]["name"] == "Administrators"
        r = await client.post(path, json=body, headers=with_key(callers.admin_as_users))
        assert r.status_code == 422 and "token" not in r.json()
        assert first.json()["token"].split("_", 1)[1] not in r.text

    async def test_creating_a_user_with_a_replay_is_403_as_without_the_key(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers
    ):
        path = f"/iam/clients/{callers.ls.client_account.id}/client-users/create"
        first = await client.post(path, json=CLIENT_USER, headers=with_key(callers.ls.client_admin))
        assert first.status_code == 200, first.text
        users = await count(session, User)
        for token in (callers.admin_as_users, callers.ls.client_member):
            keyed = await client.post(path, json=CLIENT_USER, headers=with_key(token))
            assert keyed.status_code == 403, keyed.text
            same_answer(keyed, await client.post(path, json=CLIENT_USER, headers=auth(token)))
        assert await count(session, User) == users


class TestTheCallerAsItIsNow:
    async def test_a_token_whose_user_lost_the_role_is_refused_its_own_replay(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers
    ):
        ls = callers.ls
        path = f"/iam/clients/{ls.client_account.id}/client-users/create"
        first = await client.post(path, json=CLIENT_USER, headers=with_key(ls.client_admin))
        assert first.status_code == 200, first.text
        # The administrator is made a member of Users only.
        await session.execute(delete(user_groups).where(user_groups.c.user_id == ls.admin_user.id))
        await session.execute(insert(user_groups).values(user_id=ls.admin_user.id, group_id=USERS))
        await session.commit()
        keyed = await client.post(path, json=CLIENT_USER, headers=with_key(ls.client_admin))
        assert keyed.status_code == 403, keyed.text
        same_answer(keyed, await client.post(path, json=CLIENT_USER, headers=auth(ls.client_admin)))

    async def test_a_deleted_token_is_refused_its_own_replay(
        self, client: httpx.AsyncClient, session: AsyncSession, callers: Callers
    ):
        path = f"/iam/clients/{callers.ls.client_account.id}/client-users/create"
        token = callers.admin_again
        first = await client.post(path, json=CLIENT_USER, headers=with_key(token))
        assert first.status_code == 200, first.text
        kid = int(token.split("_", 1)[0])
        gone = await client.delete(
            f"/iam/clients/{callers.ls.client_account.id}/tokens/{kid}",
            headers=auth(callers.ls.client_admin),
        )
        assert gone.status_code == 204, gone.text
        r = await client.post(path, json=CLIENT_USER, headers=with_key(token))
        assert r.status_code == 401 and "Idempotent-Replayed" not in r.headers


def _unclaiming_route(app: FastAPI) -> str:
    """A creating route that takes the key but whose handler never claims it (a bug)."""
    router = APIRouter(route_class=ApiRoute)

    @router.post("/test/unclaimed", status_code=201)
    async def create_unclaimed(
        session: Session, caller: CurrentCaller, idempotency: Idempotent
    ) -> dict[str, int]:
        row = NotificationSetting(
            reseller_id=caller.account_id,
            email="unclaimed@acme.example",
            notification_type="failed_login",
            enabled=True,
        )
        session.add(row)
        await session.flush()
        return {"id": row.id}

    app.include_router(router)
    return "/test/unclaimed"


class TestAnEndpointThatNeverClaims:
    async def test_its_keyed_change_is_undone_with_500(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        path = _unclaiming_route(app)
        r = await client.post(path, json={}, headers=with_key(ls.reseller))
        assert r.status_code == 500
        assert await count(session, NotificationSetting) == 0
        assert await count(session, IdempotencyKey) == 0
        # Without a key it has nothing to claim.
        r = await client.post(path, json={}, headers=auth(ls.reseller))
        assert r.status_code == 201
