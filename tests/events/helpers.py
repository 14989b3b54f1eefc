"""Arranging subscriptions and running the dispatcher until the outbox is empty."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import AmqpSubscription, Client
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.kit.crypto import SecretBox
from tests.factories import next_id


async def make_subscription(
    session: AsyncSession,
    box: SecretBox,
    client: Client,
    url: str,
    *,
    exchange: str | None = "events",
    routing_key: str | None = "user.actions",
    child_events: bool = False,
) -> AmqpSubscription:
    """The one factory of AMQP subscriptions (events and cloud tests): ``url`` encrypted
    with ``box``, the app's (``app_state(app).secret_box``) or tests/cloud/helpers.py's BOX."""
    sub = AmqpSubscription(
        id=next_id(),
        client_id=client.id,
        connection_string_encrypted=box.encrypt(url),
        exchange=exchange,
        routing_key=routing_key,
        receive_child_client_events=child_events,
    )
    session.add(sub)
    await session.commit()
    return sub


async def dispatch_all(dispatcher: Dispatcher, rounds: int = 50) -> None:
    """Runs delivery passes until one finds nothing to do."""
    for _ in range(rounds):
        if not await dispatcher.deliver_once():
            return
