"""access.md: who is let in. Every 401 case, and the case-insensitive scheme."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.types import utcnow
from tests.factories import make_client, make_key, make_reseller, make_user

URL = "/iam/activity_log/requests"


async def _key(session: AsyncSession, **key_kw: object) -> str:
    account = await make_client(session, reseller_id=(await make_reseller(session)).id)
    token = await make_key(session, await make_user(session, account), **key_kw)
    await session.commit()
    return token


def assert_401(r: httpx.Response, exception_class: str) -> None:
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == "APIKey"
    body = r.json()
    assert body["exception_class"] == exception_class
    assert body["request_id"] == r.headers["x-request-id"]


class TestAccepted:
    @pytest.mark.parametrize("scheme", ["apikey", "APIKey", "Apikey", "APIKEY"])
    async def test_scheme_is_case_insensitive(
        self, client: httpx.AsyncClient, session: AsyncSession, scheme: str
    ):
        token = await _key(session)
        r = await client.get(URL, headers={"Authorization": f"{scheme} {token}"})
        assert r.status_code == 200, r.text

    async def test_legacy_dollar_separator(self, client: httpx.AsyncClient, session: AsyncSession):
        token = await _key(session)
        r = await client.get(URL, headers={"Authorization": f"apikey {token.replace('_', '$', 1)}"})
        assert r.status_code == 200

    async def test_key_not_yet_expired(self, client: httpx.AsyncClient, session: AsyncSession):
        token = await _key(session, expires_at=utcnow() + timedelta(hours=1))
        r = await client.get(URL, headers={"Authorization": f"apikey {token}"})
        assert r.status_code == 200


class TestRefused:
    async def test_no_header(self, client: httpx.AsyncClient):
        r = await client.get(URL)
        assert_401(r, "not_authenticated")
        assert r.json()["message"] == "Authentication credentials were not provided."

    @pytest.mark.parametrize(
        "header",
        [
            "Bearer 1_abc",
            "apikey",
            "apikey ",
            "apikey abc",
            "apikey 1-abc",
            "apikey _abc",
            "apikey 99999999999_abc",
            "1_abc",
        ],
    )
    async def test_malformed_header(self, client: httpx.AsyncClient, header: str):
        r = await client.get(URL, headers={"Authorization": header})
        assert_401(r, "token_not_valid")

    async def test_unknown_key_id(self, client: httpx.AsyncClient, session: AsyncSession):
        await _key(session)
        r = await client.get(URL, headers={"Authorization": "apikey 424242_whatever"})
        assert_401(r, "token_not_valid")

    async def test_wrong_secret(self, client: httpx.AsyncClient, session: AsyncSession):
        token = await _key(session)
        key_id = token.split("_")[0]
        r = await client.get(URL, headers={"Authorization": f"apikey {key_id}_wrong"})
        assert_401(r, "token_not_valid")

    async def test_expired_key(self, client: httpx.AsyncClient, session: AsyncSession):
        token = await _key(session, expires_at=utcnow() - timedelta(seconds=1))
        assert_401(
            await client.get(URL, headers={"Authorization": f"apikey {token}"}), "token_not_valid"
        )

    async def test_revoked_key(self, client: httpx.AsyncClient, session: AsyncSession):
        token = await _key(session, revoked=True)
        assert_401(
            await client.get(URL, headers={"Authorization": f"apikey {token}"}), "token_not_valid"
        )

    async def test_deleted_user(self, client: httpx.AsyncClient, session: AsyncSession):
        account = await make_client(session)
        token = await make_key(session, await make_user(session, account, deleted=True))
        await session.commit()
        assert_401(
            await client.get(URL, headers={"Authorization": f"apikey {token}"}), "token_not_valid"
        )

    async def test_inactive_user(self, client: httpx.AsyncClient, session: AsyncSession):
        account = await make_client(session)
        token = await make_key(session, await make_user(session, account, is_active=False))
        await session.commit()
        assert_401(
            await client.get(URL, headers={"Authorization": f"apikey {token}"}), "token_not_valid"
        )

    async def test_user_of_deleted_account(self, client: httpx.AsyncClient, session: AsyncSession):
        account = await make_client(session, deleted=True)
        token = await make_key(session, await make_user(session, account))
        await session.commit()
        assert_401(
            await client.get(URL, headers={"Authorization": f"apikey {token}"}), "token_not_valid"
        )

    async def test_refusal_does_not_reveal_why(
        self, client: httpx.AsyncClient, session: AsyncSession
    ):
        token = await _key(session, revoked=True)
        revoked = await client.get(URL, headers={"Authorization": f"apikey {token}"})
        unknown = await client.get(URL, headers={"Authorization": "apikey 77777_x"})
        assert revoked.json()["message"] == unknown.json()["message"]

    async def test_auth_comes_before_validation(self, client: httpx.AsyncClient):
        r = await client.post("/iam/admin/sellers", json={"email": "bad"})
        assert_401(r, "not_authenticated")
