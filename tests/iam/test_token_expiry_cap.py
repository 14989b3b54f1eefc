"""A token may not make a token that outlives it (docs/iam.md, "API tokens"): POST
/iam/clients/{clientId}/tokens sent with a token that expires answers 400 naming
`exp_date` when the new token would expire later, or never."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey
from cloudadmin.db.types import utcnow
from cloudadmin.kit.timeparse import isoformat_z
from tests.factories import Landscape, auth, landscape, make_key
from tests.iam.accounts_helpers import count


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def url(ls: Landscape) -> str:
    return f"/iam/clients/{ls.client_account.id}/tokens"


def body(exp_date: datetime | None) -> dict[str, object]:
    return {
        "name": "successor",
        "exp_date": None if exp_date is None else isoformat_z(exp_date),
        "client_user": {"role": {"id": 2, "name": "Users"}},
    }


def whole_seconds_from_now(seconds: int) -> datetime:
    return utcnow().replace(microsecond=0) + timedelta(seconds=seconds)


async def expiring_token(session: AsyncSession, ls: Landscape, at: datetime) -> str:
    """A token of the client administrator that expires ``at``."""
    token = await make_key(session, ls.admin_user, expires_at=at)
    await session.commit()
    return token


class TestATokenThatExpires:
    async def test_the_issues_case_a_60_s_token_makes_no_token_that_never_expires(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        # A minute is far more than the request takes, even on a busy machine.
        token = await expiring_token(session, ls, whole_seconds_from_now(60))
        before = await count(session, ApiKey)
        r = await client.post(url(ls), json=body(None), headers=auth(token))
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == ["exp_date"]
        assert await count(session, ApiKey) == before

    async def test_it_may_make_one_that_expires_when_it_does(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        own = whole_seconds_from_now(3600)
        token = await expiring_token(session, ls, own)
        r = await client.post(url(ls), json=body(own), headers=auth(token))
        assert r.status_code == 200, r.text
        assert r.json()["exp_date"] == isoformat_z(own)

    async def test_one_second_later_is_400_naming_exp_date(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        own = whole_seconds_from_now(3600)
        token = await expiring_token(session, ls, own)
        before = await count(session, ApiKey)
        r = await client.post(url(ls), json=body(own + timedelta(seconds=1)), headers=auth(token))
        assert r.status_code == 400, r.text
        [message] = r.json()["errors"]["exp_date"]
        assert isoformat_z(own) in message
        assert await count(session, ApiKey) == before

    async def test_it_may_make_one_that_expires_sooner(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        own = whole_seconds_from_now(3600)
        token = await expiring_token(session, ls, own)
        r = await client.post(url(ls), json=body(own - timedelta(minutes=30)), headers=auth(token))
        assert r.status_code == 200, r.text

    async def test_its_successor_is_bound_by_it_in_turn(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        own = whole_seconds_from_now(3600)
        first = await expiring_token(session, ls, own)
        made = await client.post(url(ls), json=body(own), headers=auth(first))
        successor = made.json()["token"]
        r = await client.post(url(ls), json=body(None), headers=auth(successor))
        assert r.status_code == 400 and "exp_date" in r.json()["errors"]


class TestATokenThatNeverExpires:
    async def test_it_may_make_one_that_never_expires(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(url(ls), json=body(None), headers=auth(ls.client_admin))
        assert r.status_code == 200, r.text
        assert r.json()["exp_date"] is None

    async def test_it_may_make_one_that_expires_whenever(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        later = whole_seconds_from_now(10 * 365 * 24 * 3600)
        r = await client.post(url(ls), json=body(later), headers=auth(ls.client_admin))
        assert r.status_code == 200, r.text
