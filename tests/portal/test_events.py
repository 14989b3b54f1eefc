"""docs/portal.md, "Events", over HTTP on both databases: the delivery health of the
subscriptions a person may see, with a real receiver that answers 500 and the
dispatcher's own passes; "retry now" (its tenancy, its CSRF token, its activity-log
row); secrets never in the page; the user-action feed and its filters."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import ActivityLogEntry, Client, WebhookDeliveryState
from cloudadmin.db.types import utcnow
from cloudadmin.errors import PermissionDenied
from cloudadmin.events import health, user_actions
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.user_actions import Resource
from cloudadmin.events.wakeup import subscribe_local
from cloudadmin.events.webhooks import refused_status
from cloudadmin.web.app_state import app_state
from tests.events.helpers import make_subscription
from tests.events.receiver import Receiver
from tests.events.test_webhooks import make_webhook
from tests.portal.people import People, sign_in

EVENTS = "/portal/events"
HEADER_SECRET = "Bearer wh-portal-s3cret"
AMQP_PASSWORD = "amqp-portal-s3cret"


@pytest.fixture
async def failing_receiver() -> AsyncIterator[Receiver]:
    r = Receiver(answers=[500] * 50)
    await r.start()
    yield r
    await r.stop()


@pytest.fixture
async def dispatcher(app: FastAPI) -> AsyncIterator[Dispatcher]:
    d = Dispatcher(
        app_state(app).engine,
        app_state(app).secret_box,
        lanes=1,
        poll_seconds=0.05,
        outbound=app_state(app).outbound,
    )
    yield d
    await d.webhooks.close()
    await d.brokers.close()


async def account(session: AsyncSession, account_id: int) -> Client:
    found = await session.get(Client, account_id)
    assert found is not None
    return found


async def act(
    session: AsyncSession,
    owner: Client,
    *,
    action_type: str = "update",
    api_group: str = "client",
    resource: str | None = None,
    name: str | None = None,
) -> str:
    caller = Caller(
        user_id=1,
        user_email="actor@example.com",
        superuser=False,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=owner.id,
        account_type=owner.client_type,
        account_reseller_id=owner.reseller_id,
    )
    event = await user_actions.record(
        session,
        Actor(caller, "198.51.100.1", "portal-test", "req"),
        action_type=action_type,
        api_group=api_group,
        resources=[Resource(api_group, resource or str(owner.id), name)],
        client_id=owner.id,
        reseller_id=owner.reseller_id,
        action_data={"name": "x", "password": "***"},
    )
    await session.commit()
    return event.event_id


async def state_of(session: AsyncSession, sid: int) -> WebhookDeliveryState | None:
    session.expire_all()
    row = await session.get(WebhookDeliveryState, sid)
    if row is not None:
        session.expunge(row)
    await session.rollback()
    return row


def row_of(page: str, kind: str, sid: int) -> str:
    found = re.search(rf'<tr id="{kind}-{sid}">(.*?)</tr>', page, re.S)
    assert found, page
    return re.sub(r"\s+", " ", found.group(1))


async def failing_webhook(
    app: FastAPI,
    session: AsyncSession,
    owner: Client,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> int:
    """A webhook subscription of ``owner`` whose receiver answered 500 to its one event,
    its next attempt pushed ten minutes on (a long backoff, without waiting for it)."""
    sid = await make_webhook(
        session, app_state(app).secret_box, owner, receiver.url, "X-Hook-Auth", HEADER_SECRET
    )
    await act(session, owner)
    before = len(receiver.received)
    assert await dispatcher.deliver_once()
    assert len(receiver.received) == before + 1
    state = await state_of(session, sid)
    assert state is not None and state.attempts == 1
    await session.execute(
        update(WebhookDeliveryState)
        .where(WebhookDeliveryState.subscription_id == sid)
        .values(next_attempt_at=utcnow() + timedelta(minutes=10))
    )
    await session.commit()
    return sid


class TestHealth:
    async def test_a_failing_receiver_shows_its_backlog_failure_and_next_retry(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        failing_receiver: Receiver,
        dispatcher: Dispatcher,
    ):
        mine = await account(session, people.reseller_id)
        sid = await failing_webhook(app, session, mine, failing_receiver, dispatcher)
        client_sub = await make_subscription(
            session,
            app_state(app).secret_box,
            await account(session, people.client_id),
            f"amqp://events:{AMQP_PASSWORD}@127.0.0.1:5999/%2F",
        )
        await sign_in(client, people.emails["reseller"])
        r = await client.get(EVENTS)
        assert r.status_code == 200
        row = row_of(r.text, "webhook", sid)
        assert "<strong>Failing</strong>, 1 attempt in a row" in row
        assert "<td>1</td>" in row  # the backlog
        assert refused_status(500) in row
        assert re.search(r"<td>in 10 min \(\d\d:\d\d:\d\d UTC\)</td>", row)
        assert re.search(r"<td>\d+ s</td>", row)  # the oldest event's wait
        assert "Retry now" in row and failing_receiver.url in row
        assert "header X-Hook-Auth: ***" in row
        # The client's AMQP subscription: a visible account's, nothing owed.
        amqp = row_of(r.text, "amqp", client_sub.id)
        assert "Up to date" in amqp and "not waiting" in amqp
        assert "amqp://events:***@127.0.0.1:5999/%2F" in amqp
        # Filters: failing ones only; one account.
        failing = await client.get(EVENTS, params={"failing": "true"})
        assert f'id="webhook-{sid}"' in failing.text
        assert f'id="amqp-{client_sub.id}"' not in failing.text
        one = await client.get(EVENTS, params={"client_id": str(people.client_id)})
        assert f'id="amqp-{client_sub.id}"' in one.text and f'id="webhook-{sid}"' not in one.text
        bad = await client.get(EVENTS, params={"client_id": "x"})
        assert bad.status_code == 400 and 'value="x"' in bad.text

    async def test_secrets_are_never_in_the_page(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        box = app_state(app).secret_box
        mine = await account(session, people.reseller_id)
        await make_webhook(session, box, mine, "http://127.0.0.1:9/h", "X-Auth", HEADER_SECRET)
        await make_subscription(
            session, box, mine, f"amqps://events:{AMQP_PASSWORD}@127.0.0.1:5671/vh"
        )
        for who in ("reseller", "operator"):
            client.cookies.clear()
            await sign_in(client, people.emails[who])
            page = await client.get(EVENTS)
            assert page.status_code == 200
            assert "amqps://events:***@127.0.0.1:5671/vh" in page.text
            assert HEADER_SECRET not in page.text and AMQP_PASSWORD not in page.text
            assert "s3cret" not in page.text

    async def test_another_resellers_subscriptions_are_not_shown_and_an_operator_sees_all(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        box = app_state(app).secret_box
        theirs = await make_webhook(
            session, box, await account(session, people.other_client_id), "http://127.0.0.1:9/t"
        )
        mine = await make_webhook(
            session, box, await account(session, people.client_id), "http://127.0.0.1:9/m"
        )
        await sign_in(client, people.emails["reseller"])
        page = await client.get(EVENTS)
        assert f'id="webhook-{mine}"' in page.text and f'id="webhook-{theirs}"' not in page.text
        narrowed = await client.get(EVENTS, params={"client_id": str(people.other_client_id)})
        assert f'id="webhook-{theirs}"' not in narrowed.text
        client.cookies.clear()
        await sign_in(client, people.emails["operator"])
        page = await client.get(EVENTS)
        assert f'id="webhook-{mine}"' in page.text and f'id="webhook-{theirs}"' in page.text


class TestRetryNow:
    async def test_ends_the_backoff_wakes_the_dispatcher_and_is_logged(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        failing_receiver: Receiver,
        dispatcher: Dispatcher,
    ):
        mine = await account(session, people.reseller_id)
        sid = await failing_webhook(app, session, mine, failing_receiver, dispatcher)
        assert not await dispatcher.deliver_once()  # waiting for its backoff
        token = await sign_in(client, people.emails["reseller"])
        woken = asyncio.Event()
        unsubscribe = subscribe_local(woken)
        try:
            r = await client.post(f"{EVENTS}/webhook/{sid}/retry", data={"csrf_token": token})
            assert r.status_code == 303
            assert r.headers["location"] == f"{EVENTS}?retried=webhook-{sid}"
            await asyncio.wait_for(woken.wait(), 5)  # the doorbell, after the commit
        finally:
            unsubscribe()
        state = await state_of(session, sid)
        assert state is not None and state.next_attempt_at is not None
        assert state.next_attempt_at <= utcnow()
        assert state.attempts == 1 and state.last_error == refused_status(500)
        page = await client.get(r.headers["location"])
        assert f"The webhook subscription {sid} is tried again now" in page.text
        assert 'role="status"' in page.text
        # The dispatcher tries it at once, and the receiver fails it again.
        before = len(failing_receiver.received)
        assert await dispatcher.deliver_once()
        assert len(failing_receiver.received) == before + 1
        state = await state_of(session, sid)
        assert state is not None and state.attempts == 2
        # The change is in the activity log as the person's, without a key.
        session.expire_all()
        [logged] = (
            await session.execute(
                select(ActivityLogEntry).where(
                    ActivityLogEntry.actions == "portal.retry_subscription_now"
                )
            )
        ).scalars()
        assert logged.path == f"{EVENTS}/webhook/{sid}/retry" and logged.status_code == 303
        assert logged.token_id is None and logged.user_id == people.user_ids["reseller"]
        assert json.loads(logged.data) == {"csrf_token": "***"}
        await session.rollback()

    async def test_another_tenants_subscription_is_the_404_page_and_nothing_changes(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        failing_receiver: Receiver,
        dispatcher: Dispatcher,
    ):
        theirs = await account(session, people.other_client_id)
        sid = await failing_webhook(app, session, theirs, failing_receiver, dispatcher)
        before = await state_of(session, sid)
        token = await sign_in(client, people.emails["reseller"])
        for path in (
            f"{EVENTS}/webhook/{sid}/retry",
            f"{EVENTS}/webhook/999999/retry",
            f"{EVENTS}/queue/{sid}/retry",
            f"{EVENTS}/webhook/x/retry",
        ):
            r = await client.post(path, data={"csrf_token": token})
            assert r.status_code == 404, path
            assert "There is nothing here, or nothing you may see." in r.text
        forged = await client.post(f"{EVENTS}/webhook/{sid}/retry", data={"csrf_token": "x"})
        assert forged.status_code == 403
        after = await state_of(session, sid)
        assert before is not None and after is not None
        assert after.next_attempt_at == before.next_attempt_at
        # The operator may.
        client.cookies.clear()
        token = await sign_in(client, people.emails["operator"])
        r = await client.post(f"{EVENTS}/webhook/{sid}/retry", data={"csrf_token": token})
        assert r.status_code == 303
        done = await state_of(session, sid)
        assert done is not None and done.next_attempt_at is not None
        assert done.next_attempt_at <= utcnow()


class TestUserActions:
    async def test_the_feed_with_the_apis_filters(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        reseller = await account(session, people.reseller_id)
        await act(session, reseller, resource="r-1", name="Shop one")
        await act(
            session,
            await account(session, people.client_id),
            action_type="create",
            api_group="user",
            resource="u-2",
        )
        await act(session, await account(session, people.other_client_id), resource="t-3")
        await sign_in(client, people.emails["reseller"])
        everything = await client.get(f"{EVENTS}/actions")
        assert "2 user actions" in everything.text  # the reseller's and its client's
        assert "r-1" in everything.text and "t-3" not in everything.text
        assert '"password": "***"' in everything.text
        assert (
            "1 user action,"
            in (await client.get(f"{EVENTS}/actions", params={"api_group": "user"})).text
        )
        assert (
            "u-2" in (await client.get(f"{EVENTS}/actions", params={"action_type": "create"})).text
        )
        only_r1 = await client.get(f"{EVENTS}/actions", params={"resource_id": "r-1"})
        assert "r-1" in only_r1.text and "u-2" not in only_r1.text
        named = await client.get(f"{EVENTS}/actions", params={"search_field": "shop"})
        assert "Shop one" in named.text and "u-2" not in named.text
        later = (utcnow() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
        none = await client.get(f"{EVENTS}/actions", params={"from_timestamp": later})
        assert "0 user actions." in none.text
        oldest = await client.get(f"{EVENTS}/actions", params={"order_by": "asc"})
        assert oldest.text.index("r-1") < oldest.text.index("u-2")
        newest = await client.get(f"{EVENTS}/actions")
        assert newest.text.index("u-2") < newest.text.index("r-1")

    async def test_bad_filters_are_shown_with_their_messages(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get(
            f"{EVENTS}/actions",
            params={"api_group": "nope", "project_id": "x", "to_timestamp": "soon"},
        )
        assert r.status_code == 400
        assert "Choose an API group of the list." in r.text
        assert "Enter a valid date/time" in r.text
        assert 'value="x"' in r.text and 'value="soon"' in r.text
        hx = await client.get(
            f"{EVENTS}/actions", params={"project_id": "x"}, headers={"HX-Request": "true"}
        )
        assert hx.status_code == 400 and "HX-Redirect" in hx.headers


class TestRetryService:
    async def test_only_operators_and_resellers_may_before_any_lookup(self, session: AsyncSession):
        admin = Caller(
            user_id=1,
            user_email="admin@example.com",
            superuser=False,
            group_ids=frozenset({1}),
            key_id=None,
            account_id=1,
            account_type="common",
            account_reseller_id=None,
        )
        with pytest.raises(PermissionDenied):
            await health.retry_now(session, admin, "webhook", 999_999)
        await session.rollback()
