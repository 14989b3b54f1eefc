"""Real RabbitMQ (127.0.0.1:5672) and a real SMTP server (aiosmtpd on loopback)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from typing import Any

import aio_pika
import pytest
from aiosmtpd.controller import Controller
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, landscape
from tests.waiting import until

RABBIT_URL = os.environ.get("CLOUDADMIN_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def _rabbit_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), 1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def rabbit_url() -> str:
    if not _rabbit_answers():
        if os.environ.get("CI") == "true":
            pytest.fail(
                "RabbitMQ is required under CI=true but 127.0.0.1:5672 does not answer",
                pytrace=False,
            )
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")
    return RABBIT_URL


@dataclass
class Inbox:
    """A queue bound to a fresh exchange, and what arrived in it."""

    connection: aio_pika.abc.AbstractRobustConnection
    queue: aio_pika.abc.AbstractQueue
    exchange: str
    routing_key: str
    received: list[aio_pika.abc.AbstractIncomingMessage] = field(default_factory=list)

    async def on_message(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        self.received.append(message)

    async def drain(self, expected: int, timeout: float = 10.0, why: str = "") -> list[Any]:
        """Waits until ``expected`` messages arrived, returns all so far; fails saying how
        many were missing (and ``why`` they were expected) when they do not arrive within
        ``timeout``."""
        await until(
            lambda: len(self.received) >= expected,
            lambda: (
                f"{expected} messages in queue {self.exchange}"
                f"{f' ({why})' if why else ''}, {len(self.received)} arrived"
            ),
            timeout,
        )
        return self.received

    async def flushed(self, timeout: float = 30.0) -> list[Any]:
        """Publishes a marker to the exchange and waits until it arrives, then returns
        what arrived before it: every message routed to the queue before the marker (by
        a publisher that has stopped, or whose publishing was confirmed) has arrived by
        then, for one queue delivers in order."""
        marker = f"marker-{uuid.uuid4().hex}"
        channel = await self.connection.channel()
        try:
            exchange = await channel.get_exchange(self.exchange)
            await exchange.publish(
                aio_pika.Message(b"{}", message_id=marker), routing_key=self.routing_key
            )
        finally:
            await channel.close()
        await until(
            lambda: any(m.message_id == marker for m in self.received),
            f"the marker published to {self.exchange} to arrive",
            timeout,
        )
        self.received = [m for m in self.received if m.message_id != marker]
        return self.received


@pytest.fixture
async def inbox(rabbit_url: str) -> AsyncIterator[Inbox]:
    connection = await aio_pika.connect_robust(rabbit_url)
    channel = await connection.channel()
    name = f"test-{uuid.uuid4().hex[:8]}"
    exchange = await channel.declare_exchange(name, aio_pika.ExchangeType.DIRECT, auto_delete=True)
    queue = await channel.declare_queue(name, exclusive=True)
    await queue.bind(exchange, routing_key="user.actions")
    box = Inbox(connection, queue, name, "user.actions")
    await queue.consume(box.on_message, no_ack=True)
    yield box
    await connection.close()


@dataclass
class Mailbox:
    messages: list[dict[str, Any]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        parsed = message_from_bytes(envelope.content)
        self.messages.append(
            {
                "from": envelope.mail_from,
                "to": sorted(envelope.rcpt_tos),
                "subject": parsed["Subject"],
                "body": parsed.get_payload(),
            }
        )
        return "250 OK"


@pytest.fixture
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def dispatcher(app: FastAPI) -> AsyncIterator[Dispatcher]:
    """A dispatcher on the test database; tests drive its passes themselves."""
    d = Dispatcher(
        app_state(app).engine,
        app_state(app).secret_box,
        lanes=2,
        poll_seconds=0.05,
        outbound=app_state(app).outbound,
    )
    yield d
    await d.webhooks.close()
    await d.brokers.close()
