"""Sending one batch of a subscription's events to its destination: an AMQP broker or
a webhook. The dispatcher is the same for both kinds; only this differs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cloudadmin.db.models import AmqpSubscription, WebhookSubscription
from cloudadmin.events.amqp import BrokerPool, PublishError
from cloudadmin.events.webhooks import WebhookError, WebhookSender
from cloudadmin.kit.crypto import SecretBox

Message = tuple[str, dict[str, Any]]  # (message id, the published record)
# Told the count of messages the far end has taken so far, whenever it takes more.
Progress = Callable[[int], None]
# Sends one batch in order: how many leading messages the far end took, and why not the
# rest (None when the batch is done, or cut short only by the time budget: the rest go
# in the next batch, no failure).
Send = Callable[[list[Message], Progress], Awaitable[tuple[int, str | None]]]


def amqp_sender(
    brokers: BrokerPool, secret_box: SecretBox, sub: AmqpSubscription, timeout: float
) -> Send:
    """Publishes with confirms, within ``timeout``; a broker that confirms only the first
    messages has failed for the rest. The batch is one step: progress is its end. The
    subscription is read (and its secret decrypted) now; the batch is sent later."""
    url = secret_box.decrypt(sub.connection_string_encrypted)
    exchange, routing_key = sub.exchange, sub.routing_key

    async def send(messages: list[Message], progress: Progress) -> tuple[int, str | None]:
        try:
            confirmed = await asyncio.wait_for(
                brokers.publish(url, exchange, routing_key, messages), timeout
            )
        except PublishError as exc:
            return 0, str(exc)
        except TimeoutError:
            await brokers.drop(url)
            return 0, f"no confirmation within {timeout:.0f}s"
        except asyncio.CancelledError:  # abandoned (a slow broker): confirms are owed
            await brokers.drop(url)
            raise
        if confirmed < len(messages):
            return confirmed, "the broker did not confirm every message"
        return confirmed, None

    return send


def webhook_sender(
    webhooks: WebhookSender, secret_box: SecretBox, sub: WebhookSubscription, budget: float
) -> Send:
    """POSTs one message at a time, until one is refused or ``budget`` seconds are up."""
    url, header_name = sub.url, sub.auth_header_name
    header_value = secret_box.decrypt(sub.auth_header_value_encrypted)

    async def send(messages: list[Message], progress: Progress) -> tuple[int, str | None]:
        try:
            taken = await webhooks.post(
                url, header_name, header_value, messages, budget=budget, progress=progress
            )
        except WebhookError as exc:
            return exc.accepted, str(exc)
        return taken, None

    return send
