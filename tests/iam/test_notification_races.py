"""Concurrent changes of one notification setting (issue 13): exactly one DELETE
wins and records the one `delete` event, the others answer 404; a PATCH that comes
after a DELETE answers 404, never a 500. See tests/races.py for how the requests are
made to overlap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import NotificationSetting
from tests.factories import Landscape, auth, landscape
from tests.iam.accounts_helpers import count, events
from tests.iam.test_notification_settings import add, base
from tests.races import in_order

ROUNDS = 10


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def other_client(app: object) -> AsyncIterator[httpx.AsyncClient]:
    """A second client of the same app: its requests have connections of their own."""
    transport = httpx.ASGITransport(app=app, client=("203.0.113.8", 40001))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def delete_events(session: AsyncSession) -> int:
    return sum(
        1
        for e in await events(session)
        if e["api_group"] == "notification_settings" and e["action_type"] == "delete"
    )


class TestDeleteRacingDelete:
    async def test_one_wins_the_other_is_404(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "race@acme.example")
        url = f"{base(rid)}/{sid}"
        first, second = await in_order(
            app,
            session,
            NotificationSetting,
            sid,
            client.delete(url, headers=auth(ls.reseller)),
            other_client.delete(url, headers=auth(ls.reseller)),
        )
        assert sorted([first.status_code, second.status_code]) == [204, 404]
        loser = first if first.status_code == 404 else second
        assert loser.json()["exception_class"] == "NotFoundError"
        assert await delete_events(session) == 1
        assert await count(session, NotificationSetting) == 0

    async def test_rounds_of_simultaneous_deletes_record_one_event_each(
        self,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        rid = ls.reseller_account.id
        outcomes = []
        for n in range(ROUNDS):
            url = f"{base(rid)}/{await add(session, rid, f'race{n}@acme.example')}"
            answers = await asyncio.gather(
                client.delete(url, headers=auth(ls.reseller)),
                other_client.delete(url, headers=auth(ls.reseller)),
            )
            outcomes.append(sorted(r.status_code for r in answers))
        assert outcomes == [[204, 404]] * ROUNDS
        assert await delete_events(session) == ROUNDS


class TestPatchRacingDelete:
    async def test_patch_after_the_delete_is_404(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        dialect: str,
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "race@acme.example")
        url = f"{base(rid)}/{sid}"
        delete, patch = await in_order(
            app,
            session,
            NotificationSetting,
            sid,
            client.delete(url, headers=auth(ls.reseller)),
            other_client.patch(url, headers=auth(ls.reseller), json={"enabled": False}),
        )
        assert delete.status_code == 204
        # PostgreSQL hands the row over in arrival order; SQLite picks an order.
        assert patch.status_code in ({404} if dialect == "postgresql" else {200, 404})
        assert await delete_events(session) == 1

    async def test_patch_before_the_delete_is_applied(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "race@acme.example")
        url = f"{base(rid)}/{sid}"
        patch, delete = await in_order(
            app,
            session,
            NotificationSetting,
            sid,
            client.patch(url, headers=auth(ls.reseller), json={"enabled": False}),
            other_client.delete(url, headers=auth(ls.reseller)),
        )
        assert delete.status_code == 204
        assert patch.status_code in (200, 404)
        assert patch.status_code != 200 or patch.json()["enabled"] is False

    async def test_rounds_of_simultaneous_patch_and_delete_never_fail(
        self,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        rid = ls.reseller_account.id
        patches = []
        for n in range(ROUNDS):
            url = f"{base(rid)}/{await add(session, rid, f'race{n}@acme.example')}"
            patch, delete = await asyncio.gather(
                client.patch(
                    url,
                    headers=auth(ls.reseller),
                    json={"enabled": False, "email": f"new{n}@acme.example"},
                ),
                other_client.delete(url, headers=auth(ls.reseller)),
            )
            assert delete.status_code == 204
            patches.append(patch.status_code)
        assert set(patches) <= {200, 404}, patches
