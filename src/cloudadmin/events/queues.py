"""The outbox's two queues: AMQP and webhook subscriptions. Each kind has its own
subscriptions, deliveries (one event owed to one subscription) and dispatcher states,
of one shape (db/models/events.py), which the dispatcher serves the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from cloudadmin.db.models import (
    AmqpSubscription,
    DeliveryState,
    EventDelivery,
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookSubscription,
)

Subscription = TypeVar("Subscription", AmqpSubscription, WebhookSubscription)


@dataclass(frozen=True)
class Queue(Generic[Subscription]):
    """One kind of subscription's share of the outbox: the subscriptions, the events
    owed to each, and the dispatcher's state per subscription (same columns for both
    kinds). ``settings_of``: what a delivery depends on; a failure seen with other
    settings than the subscription's current ones says nothing about them."""

    name: str
    subscription: type[Subscription]
    delivery: type[EventDelivery] | type[WebhookDelivery]
    state: type[DeliveryState] | type[WebhookDeliveryState]
    settings_of: Callable[[Subscription], tuple[str, ...]]


def _amqp_settings(sub: AmqpSubscription) -> tuple[str, ...]:
    """The connection string is compared encrypted: a new one is encrypted with a fresh
    nonce, so any update of it shows."""
    return (sub.connection_string_encrypted, sub.exchange or "", sub.routing_key or "")


def _webhook_settings(sub: WebhookSubscription) -> tuple[str, ...]:
    return (sub.url, sub.auth_header_name, sub.auth_header_value_encrypted)


AMQP = Queue("amqp", AmqpSubscription, EventDelivery, DeliveryState, _amqp_settings)
WEBHOOK = Queue(
    "webhook", WebhookSubscription, WebhookDelivery, WebhookDeliveryState, _webhook_settings
)
# Either queue, where both are served alike.
AnyQueue = Queue[AmqpSubscription] | Queue[WebhookSubscription]
QUEUES: tuple[AnyQueue, ...] = (AMQP, WEBHOOK)
