"""The provider's official SDK (``gcore``), unchanged and strictly validating, on the IAM
operations it calls at the provider's current paths: ``iam.api_tokens`` (the v2 token
paths) and ``iam.users.invite`` (POST /iam/clients/invite_user). Its own client talks HTTP
to the app (an httpx client on the ASGI transport, given to the SDK as ``http_client``),
(the walk of the whole SDK, against a real server, is tests/sdk/)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import gcore
import httpx
import pytest
from gcore import AsyncGcore
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding
from tests.factories import Landscape, landscape


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    ls = await landscape(session)
    # An invitation needs a mail server to go through (the mail itself is tested in
    # test_invitations.py).
    session.add(
        Branding(
            reseller_id=ls.reseller_account.id,
            domain="panel.acme.example",
            public_settings={},
            mail_server={"host": "127.0.0.1", "port": "25", "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    await session.commit()
    return ls


def sdk_for(http: httpx.AsyncClient, key: str) -> AsyncGcore:
    return AsyncGcore(
        api_key=key,
        base_url="http://testserver",
        http_client=http,
        max_retries=0,
        _strict_response_validation=True,  # a shape the SDK's model rejects raises
    )


@pytest.fixture
async def http(app: object) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport) as client:
        yield client


class TestApiTokens:
    async def test_create_list_get_delete(self, http: httpx.AsyncClient, ls: Landscape):
        sdk = sdk_for(http, ls.client_admin)
        cid = ls.client_account.id
        created = await sdk.iam.api_tokens.create(
            cid,
            name="CI",
            description="deploys",
            exp_date="2099-01-01T12:00:00.000000Z",
            client_user={"role": {"id": 5, "name": "Engineers"}},
        )
        assert created.token and created.token.startswith(f"{created.id}_")
        assert created.client_user.role.name == "Engineers"
        assert created.last_usage == created.created  # not used yet
        bare = await sdk.iam.api_tokens.create(cid, name="bare", exp_date=None, client_user={})
        assert bare.exp_date is None and bare.client_user.role.name == "Administrators"

        # The new token itself authenticates the SDK.
        as_token = sdk_for(http, created.token)
        listed = await as_token.iam.api_tokens.list(cid)
        # An Engineers token acts as a member: the tokens its user issued, the user's
        # landscape key (no name, no role) among them.
        assert {created.id, bare.id} < {t.id for t in listed} and len(listed) == 3
        everything = await sdk.iam.api_tokens.list(cid)  # the administrator: the member's too
        assert len(everything) == 4
        engineers = await sdk.iam.api_tokens.list(cid, role="Engineers")
        assert [t.id for t in engineers] == [created.id]
        got = await sdk.iam.api_tokens.get(created.id, client_id=cid)
        assert (got.id, got.name, got.description) == (created.id, "CI", "deploys")
        assert got.exp_date == "2099-01-01T12:00:00Z" and got.last_usage

        await sdk.iam.api_tokens.delete(created.id, client_id=cid)
        deleted = await sdk.iam.api_tokens.get(created.id, client_id=cid)
        assert deleted.deleted is True and deleted.client_user.deleted is True
        assert [t.id for t in await sdk.iam.api_tokens.list(cid, deleted=True)] == [created.id]
        with pytest.raises(gcore.AuthenticationError):
            await as_token.iam.api_tokens.list(cid)

    async def test_another_tenant_is_not_found(self, http: httpx.AsyncClient, ls: Landscape):
        cid = ls.client_account.id
        made = await sdk_for(http, ls.client_admin).iam.api_tokens.create(
            cid, name="CI", exp_date=None, client_user={}
        )
        other = sdk_for(http, ls.other_reseller)
        with pytest.raises(gcore.NotFoundError):
            await other.iam.api_tokens.list(cid)
        with pytest.raises(gcore.NotFoundError):
            await other.iam.api_tokens.get(made.id, client_id=cid)
        with pytest.raises(gcore.NotFoundError):
            await other.iam.api_tokens.delete(made.id, client_id=cid)


class TestInvite:
    async def test_invite(self, http: httpx.AsyncClient, ls: Landscape):
        sdk = sdk_for(http, ls.client_admin)
        invited = await sdk.iam.users.invite(
            client_id=ls.client_account.id,
            email="new.hire@shop.example",
            user_role={"id": 2, "name": "Users"},
            lang="de",
            name="New Hire",
        )
        assert invited.status == "sent"
        user = await sdk.iam.users.get(invited.user_id)
        assert (user.email, user.name, user.lang, user.activated) == (
            "new.hire@shop.example",
            "New Hire",
            "de",
            False,
        )
        # Invited again before a password is set: a new link, the same user.
        again = await sdk.iam.users.invite(
            client_id=ls.client_account.id, email=user.email, user_role={"name": "Users"}
        )
        assert again.user_id == invited.user_id
        with pytest.raises(gcore.BadRequestError):  # no such group
            await sdk.iam.users.invite(
                client_id=ls.client_account.id, email="x@shop.example", user_role={"id": 100}
            )

    async def test_invite_into_another_tenant_is_not_found(
        self, http: httpx.AsyncClient, ls: Landscape
    ):
        with pytest.raises(gcore.NotFoundError):
            await sdk_for(http, ls.other_reseller).iam.users.invite(
                client_id=ls.client_account.id, email="x@shop.example", user_role={"id": 2}
            )
