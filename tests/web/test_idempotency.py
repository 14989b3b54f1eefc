"""Idempotent retries: a creating POST sent with an Idempotency-Key runs once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import (
    ActivityLogEntry,
    AmqpSubscription,
    IdempotencyKey,
    NotificationSetting,
    Seller,
    User,
)
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.idempotency import LEASE_SECONDS, Idempotent
from cloudadmin.web.route import ApiRoute
from tests.factories import Landscape, auth, landscape, make_key, make_user
from tests.iam.accounts_helpers import STRONG_PASSWORD, count

SELLERS = "/iam/admin/sellers"
SUBSCRIBE = "/cloud/v1/user_actions/subscribe_amqp"
KEY = "3f0c8a52-retry-me"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def seller(email: str = "jane@sales.example") -> dict[str, object]:
    return {"email": email, "full_name": "Jane Seller"}


def with_key(token: str, key: str = KEY) -> dict[str, str]:
    return {**auth(token), "Idempotency-Key": key}


@dataclass
class Creating:
    """A creating operation: its request, and the rows it creates."""

    name: str
    path: Any  # (Landscape) -> str
    body: dict[str, object]
    caller: str  # attribute of Landscape
    model: Any
    status: int


CREATING = [
    Creating("seller", lambda ls: SELLERS, seller(), "reseller", Seller, 200),
    Creating(
        "user",
        lambda ls: "/iam/users",
        {
            "email": "owner@newshop.example",
            "password": STRONG_PASSWORD,
            "company": "New Shop Ltd",
            "name": "Olivia Owner",
        },
        "reseller",
        User,
        201,
    ),
    Creating(
        "client user",
        lambda ls: f"/iam/clients/{ls.client_account.id}/client-users/create",
        {
            "username": "engineer@shop.example",
            "password": STRONG_PASSWORD,
            "name": "Eve Engineer",
            "user_role": {"user_role": {"id": 5, "name": "Engineers"}},
        },
        "client_admin",
        User,
        200,
    ),
    Creating(
        "notification setting",
        lambda ls: f"/iam/reselling/resellers/{ls.reseller_account.id}/notification_settings",
        {"notification_type": "deletion_request", "email": "alerts@acme.example"},
        "reseller",
        NotificationSetting,
        201,
    ),
    Creating(
        "amqp subscription",
        lambda ls: SUBSCRIBE,
        {"connection_string": "amqps://events:s3cret@broker.example:5671/prod"},
        "client_admin",
        AmqpSubscription,
        204,
    ),
]


async def keys_stored(session: AsyncSession) -> list[Any]:
    rows = (await session.execute(select(IdempotencyKey.__table__))).all()
    await session.commit()  # end the read: on SQLite it holds the database lock
    return rows


async def age_keys(session: AsyncSession, by: timedelta) -> None:
    """Move every stored key's creation back (instead of waiting for the clock)."""
    for row in await keys_stored(session):
        await session.execute(
            update(IdempotencyKey)
            .where(
                IdempotencyKey.account_id == row.account_id,
                IdempotencyKey.idempotency_key == row.idempotency_key,
            )
            .values(created_at=row.created_at - by)
        )
    await session.commit()


class TestReplay:
    @pytest.mark.parametrize("op", CREATING, ids=lambda op: op.name)
    async def test_a_repeat_replays_the_first_answer_and_creates_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape, op: Creating
    ):
        before = await count(session, op.model)
        token = getattr(ls, op.caller)
        first = await client.post(op.path(ls), json=op.body, headers=with_key(token))
        assert first.status_code == op.status, first.text
        assert "Idempotent-Replayed" not in first.headers
        assert await count(session, op.model) > before
        created = await count(session, op.model)

        again = await client.post(op.path(ls), json=op.body, headers=with_key(token))
        assert again.status_code == op.status
        assert again.content == first.content
        assert again.headers.get("content-type") == first.headers.get("content-type")
        assert again.headers["Idempotent-Replayed"] == "true"
        assert await count(session, op.model) == created

    async def test_the_body_matches_by_content_not_by_bytes(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        headers = {**with_key(ls.reseller), "Content-Type": "application/json"}
        first = await client.post(
            SELLERS,
            content=b'{"email": "jane@sales.example", "full_name": "Jane Seller"}',
            headers=headers,
        )
        again = await client.post(
            SELLERS,
            content=b'{"full_name":"Jane Seller","email":"jane@sales.example"}',
            headers=headers,
        )
        assert first.status_code == 200, first.text
        assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        assert await count(session, Seller) == 1

    async def test_the_activity_log_records_the_replayed_request(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        for _ in range(2):
            r = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
            assert r.status_code == 200
        rows = (
            await session.execute(
                select(ActivityLogEntry.status_code, ActivityLogEntry.reverted).where(
                    ActivityLogEntry.path == SELLERS
                )
            )
        ).all()
        await session.commit()
        assert [tuple(r) for r in rows] == [(200, False), (200, False)]

    async def test_without_a_key_each_request_runs(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        for email in ("a@sales.example", "b@sales.example"):
            r = await client.post(SELLERS, json=seller(email), headers=auth(ls.reseller))
            assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers
        assert await count(session, Seller) == 2
        assert await keys_stored(session) == []


class TestAnotherRequest:
    async def test_the_same_key_with_another_body_is_422(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        r = await client.post(
            SELLERS, json=seller("other@sales.example"), headers=with_key(ls.reseller)
        )
        assert r.status_code == 422
        assert r.json()["exception_class"] == "UnprocessableEntity"
        assert "Idempotency-Key" in r.json()["message"]
        assert await count(session, Seller) == 1

    async def test_the_same_key_on_another_operation_is_422(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        r = await client.post(
            CREATING[3].path(ls), json=CREATING[3].body, headers=with_key(ls.reseller)
        )
        assert r.status_code == 422
        assert await count(session, NotificationSetting) == 0

    async def test_another_user_of_the_account_is_422(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        colleague = await make_key(session, await make_user(session, ls.reseller_account))
        await session.commit()
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        r = await client.post(SELLERS, json=seller(), headers=with_key(colleague))
        assert r.status_code == 422
        assert await count(session, Seller) == 1

    async def test_a_key_longer_than_255_characters_is_400(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        r = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller, "k" * 256))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["Idempotency-Key"]
        assert await count(session, Seller) == 0


class TestAccounts:
    async def test_another_account_with_the_same_key_is_independent(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        mine = await client.post(
            SELLERS, json=seller("a@sales.example"), headers=with_key(ls.reseller)
        )
        theirs = await client.post(
            SELLERS, json=seller("b@sales.example"), headers=with_key(ls.other_reseller)
        )
        assert mine.status_code == theirs.status_code == 200
        assert "Idempotent-Replayed" not in theirs.headers
        assert theirs.json()["reseller_name"] == "Other Hosting"
        assert await count(session, Seller) == 2
        assert {row.account_id for row in await keys_stored(session)} == {
            ls.reseller_account.id,
            ls.other_reseller_account.id,
        }


class TestFailedFirstAttempt:
    async def test_a_rejected_request_does_not_keep_the_key(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        bad = await client.post(
            SELLERS, json={**seller(), "phone": "CALL ME"}, headers=with_key(ls.reseller)
        )
        assert bad.status_code == 400
        assert await keys_stored(session) == []
        good = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        assert good.status_code == 200 and "Idempotent-Replayed" not in good.headers
        assert await count(session, Seller) == 1

    async def test_the_same_request_runs_again_after_it_failed(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        op = CREATING[4]
        await client.post(op.path(ls), json=op.body, headers=auth(ls.client_admin))
        taken = await client.post(op.path(ls), json=op.body, headers=with_key(ls.client_admin))
        assert taken.status_code == 409  # the account already has a subscription
        gone = await client.post(
            f"{SUBSCRIBE.rsplit('/', 1)[0]}/unsubscribe_amqp", headers=auth(ls.client_admin)
        )
        assert gone.status_code == 204
        r = await client.post(op.path(ls), json=op.body, headers=with_key(ls.client_admin))
        assert r.status_code == 204 and "Idempotent-Replayed" not in r.headers
        assert await count(session, AmqpSubscription) == 1


class TestExpiry:
    async def test_an_expired_key_no_longer_replays(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        first = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        await age_keys(session, timedelta(hours=24, seconds=1))
        # Another body on purpose: an expired key is free for any request.
        r = await client.post(
            SELLERS, json=seller("later@sales.example"), headers=with_key(ls.reseller)
        )
        assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers
        assert r.json()["id"] != first.json()["id"]
        assert await count(session, Seller) == 2

    async def test_a_key_younger_than_the_ttl_still_replays(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        await age_keys(session, timedelta(hours=23, minutes=59))
        r = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        assert r.headers.get("Idempotent-Replayed") == "true"

    async def test_expired_keys_are_purged_by_later_claims(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        await client.post(
            SELLERS, json=seller("b@sales.example"), headers=with_key(ls.other_reseller, "theirs")
        )
        await age_keys(session, timedelta(hours=25))
        await client.post(
            SELLERS, json=seller("c@sales.example"), headers=with_key(ls.reseller, "new")
        )
        assert [row.idempotency_key for row in await keys_stored(session)] == ["new"]


async def unanswer(session: AsyncSession) -> None:
    """Turn the stored keys back into running claims: as a request leaves its key while
    it runs, or when it died before its commit (then its change is absent too)."""
    await session.execute(
        update(IdempotencyKey).values(status_code=None, content_type=None, body=None)
    )
    await session.commit()


class TestRunning:
    async def test_a_running_claim_answers_409(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        await unanswer(session)
        r = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"
        assert "still running" in r.json()["message"]
        assert await count(session, Seller) == 1

    async def test_a_running_claim_of_another_request_is_422(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        await unanswer(session)
        r = await client.post(
            SELLERS, json=seller("b@sales.example"), headers=with_key(ls.reseller)
        )
        assert r.status_code == 422

    async def test_a_claim_abandoned_past_the_lease_is_taken_over(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        # The first request died before its commit: no answer, no seller.
        await unanswer(session)
        await session.execute(delete(Seller))
        await session.commit()
        await age_keys(session, timedelta(seconds=LEASE_SECONDS))
        r = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers
        again = await client.post(SELLERS, json=seller(), headers=with_key(ls.reseller))
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert again.content == r.content
        assert await count(session, Seller) == 1

    async def test_a_repeat_while_the_first_runs_is_409(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        dialect: str,
    ):
        held = _held_route(app, write_first=dialect == "postgresql")
        first = asyncio.create_task(
            client.post("/test/held", json={"n": 1}, headers=with_key(ls.reseller))
        )
        await _wait_for(held.entered, first)
        r = await client.post("/test/held", json={"n": 1}, headers=with_key(ls.reseller))
        assert r.status_code == 409, r.text
        held.go.set()
        done = await asyncio.wait_for(first, 30)
        assert done.status_code == 201, done.text
        r = await client.post("/test/held", json={"n": 1}, headers=with_key(ls.reseller))
        assert r.status_code == 201 and r.headers["Idempotent-Replayed"] == "true"
        assert r.json() == done.json()
        assert await count(session, NotificationSetting) == 1

    async def test_concurrent_repeats_create_once(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        # Notification settings may repeat: without the key, each would be created.
        op = CREATING[3]
        answers = await asyncio.gather(
            *(
                client.post(op.path(ls), json=op.body, headers=with_key(ls.reseller))
                for _ in range(4)
            )
        )
        statuses = sorted(r.status_code for r in answers)
        assert statuses[0] == 201 and set(statuses) <= {201, 409}, statuses
        made = [r for r in answers if r.status_code == 201]
        assert len({r.content for r in made}) == 1
        assert await count(session, NotificationSetting) == 1


@dataclass
class _Held:
    entered: asyncio.Event
    go: asyncio.Event


def _held_route(app: FastAPI, *, write_first: bool) -> _Held:
    """A creating route that waits inside its handler until the test lets it go. On
    PostgreSQL it has written its row by then (its transaction is open); SQLite has one
    writer, so there it waits before writing."""
    held = _Held(asyncio.Event(), asyncio.Event())
    router = APIRouter(route_class=ApiRoute)

    @router.post("/test/held", status_code=201)
    async def create_held(
        session: Session, caller: CurrentCaller, idempotency: Idempotent
    ) -> dict[str, int]:
        await idempotency.claim()

        async def write() -> int:
            row = NotificationSetting(
                reseller_id=caller.account_id,
                email="held@acme.example",
                notification_type="failed_login",
                enabled=True,
            )
            session.add(row)
            await session.flush()
            return row.id

        ident = await write() if write_first else 0
        held.entered.set()
        await asyncio.wait_for(held.go.wait(), 30)
        if not write_first:
            ident = await write()
        total = (
            await session.execute(select(func.count()).select_from(NotificationSetting))
        ).scalar_one()
        return {"id": ident, "total": total}

    app.include_router(router)
    return held


async def _wait_for(event: asyncio.Event, task: asyncio.Task[Any]) -> None:
    waiter = asyncio.create_task(event.wait())
    await asyncio.wait({waiter, task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    if not event.is_set():
        waiter.cancel()
        detail = task.result().text if task.done() else "no answer within 30 s"
        raise AssertionError(f"the first request never reached its handler: {detail}")


class TestOpenApi:
    async def test_creating_operations_document_the_header_and_its_answers(
        self, client: httpx.AsyncClient
    ):
        spec = (await client.get("/openapi.json")).json()
        ops = {
            ("/iam/users", "post"),
            ("/iam/admin/sellers", "post"),
            ("/iam/clients/{clientId}/client-users/create", "post"),
            ("/iam/reselling/resellers/{resellerId}/notification_settings", "post"),
            ("/cloud/v1/user_actions/subscribe_amqp", "post"),
        }
        for path, method in ops:
            op = spec["paths"][path][method]
            header = [p for p in op["parameters"] if p["name"] == "Idempotency-Key"]
            assert len(header) == 1, path
            assert header[0]["in"] == "header" and header[0]["required"] is False
            assert "24 h" in header[0]["description"]
            for code in ("409", "422"):
                answer = op["responses"][code]
                assert "Idempotency-Key" in answer["description"], (path, code)
                assert answer["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }
            ok = next(v for k, v in op["responses"].items() if k.startswith("2"))
            assert "Idempotent-Replayed" in ok["headers"]

    async def test_other_operations_do_not_take_it(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        patch = spec["paths"]["/iam/admin/sellers/{sellerId}"]["patch"]
        assert "Idempotency-Key" not in {p["name"] for p in patch.get("parameters", [])}
        assert "422" not in patch["responses"]
