"""Recording user actions into the outbox (delivered by the events dispatcher).

Every state-changing operation calls :func:`record` inside its own transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, false, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.db.models import (
    AmqpSubscription,
    EventDelivery,
    UserActionEvent,
    WebhookDelivery,
    WebhookSubscription,
)
from cloudadmin.db.types import utcnow
from cloudadmin.kit.redact import redact
from cloudadmin.kit.timeparse import isoformat_z


@dataclass(frozen=True, slots=True)
class Actor:
    """The caller plus what the request says about where it came from."""

    caller: Caller
    source_ip: str
    user_agent: str
    request_id: str


@dataclass(frozen=True, slots=True)
class Resource:
    resource_type: str
    resource_id: str | int


async def record(
    session: AsyncSession,
    actor: Actor,
    *,
    action_type: str,
    api_group: str,
    resources: list[Resource],
    client_id: int,
    reseller_id: int | None,
    action_data: dict[str, Any],
    project_id: int | None = None,
    region_id: int | None = None,
) -> UserActionEvent:
    """Adds one event to the outbox; ``action_data`` (the changed fields) is redacted.

    The event is owed to the account's own subscription and, when the account's
    reseller subscribed with ``receive_child_client_events``, to the reseller's too;
    and to the account's own webhook subscription (webhooks have no child events).
    """
    now = utcnow()
    event_id = str(uuid.uuid4())
    caller = actor.caller
    body = {
        "id": event_id,
        "action_type": action_type,
        "api_group": api_group,
        "resources": [
            {"resource_id": str(r.resource_id), "resource_type": r.resource_type}
            for r in resources
        ],
        "client_id": client_id,
        "user_id": caller.user_id,
        "email": caller.user_email,
        "token_id": caller.key_id,
        "project_id": project_id,
        "region_id": region_id,
        "source_user_ip": actor.source_ip,
        "user_agent": actor.user_agent,
        "timestamp": isoformat_z(now),
        "action_data": redact(action_data),
        "request_id": actor.request_id,
    }
    event = UserActionEvent(
        event_id=event_id, client_id=client_id, reseller_id=reseller_id, body=body,
        created_at=now,
    )
    session.add(event)
    subscriptions = await _subscriptions_owed(session, client_id, reseller_id)
    if subscriptions:
        await session.flush()  # the event's id
        await session.execute(
            insert(EventDelivery),
            [{"event_id": event.id, "subscription_id": sid, "delivered": False}
             for sid in subscriptions],
        )
    webhooks = await _webhooks_owed(session, client_id)
    if webhooks:
        await session.flush()
        await session.execute(
            insert(WebhookDelivery),
            [{"event_id": event.id, "subscription_id": sid, "delivered": False}
             for sid in webhooks],
        )
    return event


async def _webhooks_owed(session: AsyncSession, client_id: int) -> list[int]:
    """The account's webhook subscription, locked until commit for the same reason as
    in :func:`_subscriptions_owed`."""
    stmt = (
        select(WebhookSubscription.id)
        .where(WebhookSubscription.client_id == client_id)
        .with_for_update()
    )
    return list((await session.execute(stmt)).scalars())


async def _subscriptions_owed(
    session: AsyncSession, client_id: int, reseller_id: int | None
) -> list[int]:
    """The subscriptions that receive an event of ``client_id``.

    Their rows are locked until commit: writers for one subscription then commit one
    after the other, so delivery ids follow commit order and the dispatcher, reading
    in id order, never passes over an event that commits later with a smaller id.
    (SQLite serialises all writers anyway.)
    """
    child_events = (
        and_(AmqpSubscription.client_id == reseller_id,
             AmqpSubscription.receive_child_client_events.is_(True))
        if reseller_id is not None and reseller_id != client_id
        else false()
    )
    stmt = (
        select(AmqpSubscription.id)
        .where(or_(AmqpSubscription.client_id == client_id, child_events))
        .order_by(AmqpSubscription.id)
        .with_for_update()
    )
    return list((await session.execute(stmt)).scalars())
