"""POST subscribe_amqp_test: send one test message to a broker the caller names."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor
from cloudadmin.cloud import scoping
from cloudadmin.cloud.amqp_subscriptions.schemas import AmqpSubscriptionCreate
from cloudadmin.cloud.amqp_subscriptions.service import new_connection_string
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.events.amqp import BrokerPool, PublishError
from cloudadmin.kit.outbound import Outbound
from cloudadmin.kit.timeparse import isoformat_z


async def send_test_message(
    session: AsyncSession, actor: Actor, outbound: Outbound, body: AmqpSubscriptionCreate
) -> None:
    """Publishes ``{"test": true, ...}`` with publisher confirms; 400 saying why when the
    address is not allowed, or the broker cannot be reached or refuses it (one generic
    reason per kind of failure, never the broker's own words). Nothing is stored."""
    caller = actor.caller
    scoping.require_admin(caller)
    url = new_connection_string(body.connection_string, outbound)
    # No database lock may be held while a remote broker is waited for.
    await session.rollback()
    message_id = str(uuid.uuid4())
    message = {
        "id": message_id,
        "test": True,
        "client_id": caller.account_id,
        "user_id": caller.user_id,
        "timestamp": isoformat_z(utcnow()),
        "request_id": actor.request_id,
    }
    pool = BrokerPool(outbound)
    try:
        await pool.publish(url, body.exchange, body.routing_key, [(message_id, message)])
    except PublishError as exc:
        raise ValidationError.field("connection_string", str(exc)) from exc
    finally:
        await pool.close()
