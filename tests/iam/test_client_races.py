"""Concurrent changes of one client account (issue 13): of two deletion requests
exactly one wins (one `delete` event, one round of mails), the other is 404; a PATCH
queued behind the deletion is 404. See tests/races.py for how the requests overlap."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, MailMessage
from tests.factories import Landscape, auth, landscape
from tests.iam.accounts_helpers import count, events
from tests.iam.test_notification_settings import add
from tests.races import in_order


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def other_client(app: object) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.8", 40001))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


def url(client_id: int) -> str:
    return f"/iam/clients/{client_id}"


async def client_events(session: AsyncSession, action: str) -> int:
    return sum(
        1
        for e in await events(session)
        if e["api_group"] == "client" and e["action_type"] == action
    )


class TestDeletionRacingDeletion:
    async def test_one_wins_one_event_one_round_of_mails(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        await add(session, ls.reseller_account.id, "ops@acme.example", "deletion_request")
        cid = ls.client_account.id
        first, second = await in_order(
            app,
            session,
            Client,
            cid,
            client.delete(url(cid), headers=auth(ls.reseller)),
            other_client.delete(url(cid), headers=auth(ls.operator)),
        )
        assert sorted([first.status_code, second.status_code]) == [204, 404]
        assert await client_events(session, "delete") == 1
        assert await count(session, MailMessage) == 1


class TestPatchRacingDeletion:
    async def test_patch_after_the_deletion_is_404(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        dialect: str,
    ):
        cid = ls.client_account.id
        delete, patch = await in_order(
            app,
            session,
            Client,
            cid,
            client.delete(url(cid), headers=auth(ls.reseller)),
            other_client.patch(url(cid), headers=auth(ls.operator), json={"is_test": True}),
        )
        assert delete.status_code == 204
        # PostgreSQL hands the row over in arrival order; SQLite picks an order.
        assert patch.status_code in ({404} if dialect == "postgresql" else {200, 404})
        assert await client_events(session, "update") == (patch.status_code == 200)
