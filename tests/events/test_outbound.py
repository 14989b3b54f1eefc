"""The outbound allow-list: brokers and mail servers only at allowed addresses, and
failures that do not tell closed, filtered and silent ports apart (real RabbitMQ and
aiosmtpd on loopback; "refused" destinations are loopback sockets that count accepts)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import (
    AmqpSubscription,
    DeliveryState,
    EventDelivery,
    FailedLoginNotice,
    MailMessage,
    UserActionEvent,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox
from tests.events.helpers import make_subscription
from tests.events.sockets import SilentListener, closed_port, silent_listener
from tests.events.test_mail import configure_mail, send_all, wrong
from tests.factories import Landscape, auth, next_id

BASE = "/cloud/v1/user_actions"
TEST_URL = f"{BASE}/subscribe_amqp_test"
SUBSCRIBE = f"{BASE}/subscribe_amqp"
BRANDING = "/iam/reselling/settings"
NOT_ALLOWED = "Connections to this address are not allowed: "
TIMEOUT = 1.0  # seconds to reach a broker or mail server in these tests


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"outbound_timeout_seconds": TIMEOUT})


@pytest.fixture
def listener() -> Iterator[SilentListener]:
    with silent_listener() as s:
        yield s


def amqp(host: str, port: int, password: str = "guest", vhost: str = "%2F") -> str:
    return f"amqp://guest:{password}@{host}:{port}/{vhost}"


async def field_errors(r: httpx.Response, name: str = "connection_string") -> list[str]:
    assert r.status_code == 400, r.text
    body = r.json()
    # Under /cloud the field map is "invalid_fields", elsewhere "errors" (errors.md).
    return list((body.get("invalid_fields") or body["errors"])[name])


def branding_body(host: str, port: int) -> dict[str, Any]:
    return {
        "domain": "acme.example",
        "publicSettings": {
            "showApiDoc": True,
            "showStatusPage": "true",
            "showKnowledgeBase": True,
            "showTickets": True,
        },
        "privateSettings": {
            "mailServer": {
                "tls": False,
                "host": host,
                "port": str(port),
                "login": "",
                "password": None,
            }
        },
    }


class TestRefusedByDefault:
    """Without CLOUDADMIN_OUTBOUND_ALLOW, inward addresses are refused before any
    connection, with a 400 on the field that named them."""

    @pytest.fixture
    def settings(self, settings: Settings) -> Settings:
        return settings.model_copy(update={"outbound_allow": []})

    @pytest.mark.parametrize(
        ("host", "why"),
        [
            ("127.0.0.1", "127.0.0.1 is a loopback address"),
            ("[::1]", "::1 is a loopback address"),
            ("127.1", "127.0.0.1 is a loopback address"),
            ("localhost", "localhost is this machine"),
        ],
    )
    async def test_test_message_to_loopback_is_400_and_never_connects(
        self, client: httpx.AsyncClient, ls: Landscape, host: str, why: str
    ):
        with silent_listener("::1" if host == "[::1]" else "127.0.0.1") as target:
            r = await client.post(
                TEST_URL,
                json={"connection_string": amqp(host, target.port)},
                headers=auth(ls.client_admin),
            )
            assert await field_errors(r) == [f"{NOT_ALLOWED}{why}."]
            assert await target.accepted_before_a_probe() == 0

    @pytest.mark.parametrize(
        ("host", "why"),
        [
            ("127.0.0.1", "a loopback address"),
            ("[::1]", "a loopback address"),
            ("10.20.30.40", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.169.254", "a cloud metadata address"),
            ("[fd00:ec2::254]", "a cloud metadata address"),
            ("100.64.0.1", "a carrier-grade NAT (shared) address"),
            ("[::ffff:10.0.0.1]", "a private address"),
            ("0.0.0.0", "an unspecified address"),
            ("224.0.0.1", "a multicast address"),
        ],
    )
    async def test_subscribe_to_an_inward_address_is_400_and_stores_nothing(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        host: str,
        why: str,
    ):
        r = await client.post(
            SUBSCRIBE, json={"connection_string": amqp(host, 5672)}, headers=auth(ls.client_admin)
        )
        [message] = await field_errors(r)
        assert message.startswith(NOT_ALLOWED) and message.endswith(f"{why}.")
        assert (await session.execute(select(AmqpSubscription))).first() is None

    async def test_update_to_an_inward_address_is_400_and_keeps_the_old_one(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
    ):
        public = "amqp://guest:guest@mq.example:5672/%2F"
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            public,
            exchange=None,
            routing_key=None,
        )
        r = await client.patch(
            f"{BASE}/amqp_subscriptions/{sub.id}",
            json={"connection_string": amqp("169.254.169.254", 80)},
            headers=auth(ls.client_admin),
        )
        assert await field_errors(r) == [
            f"{NOT_ALLOWED}169.254.169.254 is a cloud metadata address."
        ]
        row = await session.get(AmqpSubscription, sub.id, populate_existing=True)
        assert row is not None
        assert app_state(app).secret_box.decrypt(row.connection_string_encrypted) == public

    async def test_mail_server_on_loopback_is_400_on_the_host_field(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
    ):
        r = await client.put(
            BRANDING, json=branding_body("127.0.0.1", 25), headers=auth(ls.reseller)
        )
        assert await field_errors(r, "privateSettings.mailServer.host") == [
            f"{NOT_ALLOWED}127.0.0.1 is a loopback address."
        ]

    async def test_dispatcher_does_not_connect_to_a_stored_inward_broker(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        listener: SilentListener,
    ):
        # Stored before the rule (or loaded by an operator): checked when connecting.
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            amqp("127.0.0.1", listener.port),
            exchange=None,
            routing_key=None,
        )
        await _one_event_for(session, sub.id)
        dispatcher = Dispatcher(
            app_state(app).engine, app_state(app).secret_box, outbound=app_state(app).outbound
        )
        try:
            assert await dispatcher.deliver_once() is True
        finally:
            await dispatcher.brokers.close()
        state = await session.get(DeliveryState, sub.id, populate_existing=True)
        assert state is not None
        assert state.last_error == f"{NOT_ALLOWED}127.0.0.1 is a loopback address."
        assert await listener.accepted_before_a_probe() == 0

    async def test_mail_is_not_sent_to_a_stored_inward_server(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        listener: SilentListener,
    ):
        await configure_mail(session, app, ls, listener.port)  # host 127.0.0.1
        await client.get("/iam/activity_log/requests", headers=wrong(ls.client_admin))
        dispatcher = Dispatcher(
            app_state(app).engine, app_state(app).secret_box, outbound=app_state(app).outbound
        )
        await send_all(dispatcher)
        row = (await session.execute(select(MailMessage))).scalar_one()
        assert row.sent is False
        assert row.last_error == f"{NOT_ALLOWED}127.0.0.1 is a loopback address."
        assert await listener.accepted_before_a_probe() == 0

    async def test_a_name_is_checked_as_resolved_when_connecting(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        listener: SilentListener,
        monkeypatch: pytest.MonkeyPatch,
    ):
        # A name that resolves inward when the service connects (DNS rebinding): the
        # address actually connected to is the one checked.
        loop = asyncio.get_running_loop()
        real = loop.getaddrinfo

        async def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            return await real(
                "127.0.0.1" if host == "rebind.example" else host, port, *args, **kwargs
            )

        monkeypatch.setattr(loop, "getaddrinfo", rebinding)
        r = await client.post(
            TEST_URL,
            json={"connection_string": amqp("rebind.example", listener.port)},
            headers=auth(ls.client_admin),
        )
        assert await field_errors(r) == [
            f"{NOT_ALLOWED}rebind.example resolves to 127.0.0.1, a loopback address."
        ]
        assert await listener.accepted_before_a_probe() == 0


class TestAllowList:
    """CLOUDADMIN_OUTBOUND_ALLOW: networks and host names reached anyway."""

    @pytest.fixture
    def settings(self, settings: Settings) -> Settings:
        return settings.model_copy(update={"outbound_allow": ["localhost"]})

    async def test_a_listed_name_is_reached_and_nothing_else(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        inbox: Inbox,
    ):
        r = await client.post(
            TEST_URL,
            json={
                "connection_string": amqp("localhost", 5672),
                "exchange": inbox.exchange,
                "routing_key": inbox.routing_key,
            },
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 204, r.text
        assert len(await inbox.drain(1)) == 1
        # The same broker by its address: not listed.
        r = await client.post(
            TEST_URL,
            json={
                "connection_string": amqp("127.0.0.1", 5672),
                "exchange": inbox.exchange,
                "routing_key": inbox.routing_key,
            },
            headers=auth(ls.client_admin),
        )
        assert await field_errors(r) == [f"{NOT_ALLOWED}127.0.0.1 is a loopback address."]

    def test_entries_are_networks_addresses_and_names(self):
        from cloudadmin.kit.outbound import Outbound

        policy = Outbound.from_entries(["10.0.0.0/8", "fd00::1", "mq.corp", "*.svc.corp"])
        for host in ("10.1.2.3", "[fd00::1]", "MQ.corp.", "a.b.svc.corp"):
            policy.check_host(host)
        with pytest.raises(ValueError, match="outbound_allow"):
            Outbound.from_entries(["not a host!"])


class TestOneReasonPerFailure:
    """Failures say what kind of failure it was, never the broker's or the network's
    own words, and a closed port reads exactly like one that never answers."""

    async def test_closed_and_silent_ports_read_the_same(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        listener: SilentListener,
    ):
        answers = {}
        for kind, port in (("closed", closed_port()), ("silent", listener.port)):
            r = await client.post(
                TEST_URL,
                json={"connection_string": amqp("127.0.0.1", port)},
                headers=auth(ls.client_admin),
            )
            [message] = await field_errors(r)
            answers[kind] = message.replace(str(port), "PORT")
        assert (
            answers["closed"]
            == answers["silent"]
            == ("127.0.0.1:PORT: Could not connect to the broker.")
        )
        assert listener.accepted == 1  # the silent one was reached, and said nothing

    @pytest.mark.parametrize(
        ("password", "vhost", "reason"),
        [
            ("wrong-password", "%2F", "The broker refused the user name or password."),
            (
                "guest",
                "no-such-vhost",
                "The virtual host does not exist or the user may not use it.",
            ),
        ],
    )
    async def test_broker_refusals_have_one_reason_each(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        rabbit_url: str,
        password: str,
        vhost: str,
        reason: str,
    ):
        r = await client.post(
            TEST_URL,
            json={"connection_string": amqp("127.0.0.1", 5672, password, vhost)},
            headers=auth(ls.client_admin),
        )
        assert await field_errors(r) == [f"127.0.0.1:5672: {reason}"]

    async def test_mail_to_closed_and_silent_ports_reads_the_same(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        listener: SilentListener,
        dispatcher: Dispatcher,
    ):
        errors = {}
        await configure_mail(session, app, ls, 0)
        for kind, port in (("closed", closed_port()), ("silent", listener.port)):
            r = await client.put(
                BRANDING,
                json={
                    **branding_body("127.0.0.1", port),
                    "publicSettings": {
                        **branding_body("", 0)["publicSettings"],
                        "fromEmail": "noreply@acme.example",
                    },
                },
                headers=auth(ls.reseller),
            )
            assert r.status_code == 200, r.text
            await client.get("/iam/activity_log/requests", headers=wrong(ls.client_admin))
            await send_all(dispatcher)
            row = (
                await session.execute(
                    select(MailMessage)
                    .order_by(MailMessage.id.desc())
                    .limit(1)
                    .execution_options(populate_existing=True)
                )
            ).scalar_one()
            await session.commit()
            assert row.sent is False
            errors[kind] = (row.last_error or "").replace(str(port), "PORT")
            await _forget_failed_login_notices(session)
        assert (
            errors["closed"]
            == errors["silent"]
            == ("127.0.0.1:PORT: Could not connect to the mail server.")
        )


async def _one_event_for(session: AsyncSession, subscription_id: int) -> None:
    event = UserActionEvent(
        id=next_id(),
        event_id=f"00000000-0000-4000-8000-{next_id():012d}",
        client_id=0,
        reseller_id=None,
        body={"test": True},
        created_at=utcnow(),
    )
    session.add(event)
    await session.flush()
    session.add(EventDelivery(event_id=event.id, subscription_id=subscription_id, delivered=False))
    await session.commit()


async def _forget_failed_login_notices(session: AsyncSession) -> None:
    """The next wrong key mails again (at most one mail per key per 10 minutes)."""
    await session.execute(delete(FailedLoginNotice))
    await session.commit()
