"""AMQP subscriptions: one per account. Any user of the account reads it (masked);
its administrators (and operators) subscribe, update and unsubscribe (docs/access.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import update as sql_update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.cloud import scoping
from cloudadmin.cloud.amqp_subscriptions import repository
from cloudadmin.cloud.amqp_subscriptions.connection import (
    check_destination,
    has_masked_password,
    validated,
    with_password_of,
)
from cloudadmin.cloud.amqp_subscriptions.schemas import (
    AmqpSubscription,
    AmqpSubscriptionCreate,
    AmqpSubscriptionList,
    AmqpSubscriptionUpdate,
)
from cloudadmin.cloud.one_per_account import refuse_another
from cloudadmin.db.models import AmqpSubscription as SubscriptionRow
from cloudadmin.db.models import DeliveryState
from cloudadmin.errors import NotFound, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Destinations, Outbound
from cloudadmin.kit.pagination import Paging
from cloudadmin.kit.redact import mask_url_password
from cloudadmin.web.idempotency import KeyClaim

API_GROUP = "amqp_subscription"
NOT_NULL = "This field may not be null."
MASKED = (
    "The password is the mask (***) the API answers with; send the password "
    "itself (only an update may send the mask back, to keep the stored one)."
)


def new_connection_string(value: str, outbound: Outbound) -> str:
    """A connection string sent to be stored or tried: valid, not masked, allowed."""
    plain = validated(value)
    if has_masked_password(plain):
        raise ValidationError.field("connection_string", MASKED)
    check_destination(plain, outbound)
    return plain


def _out(row: SubscriptionRow, box: SecretBox) -> AmqpSubscription:
    return AmqpSubscription(
        connection_string=mask_url_password(box.decrypt(row.connection_string_encrypted)),
        exchange=row.exchange,
        id=row.id,
        receive_child_client_events=row.receive_child_client_events,
        routing_key=row.routing_key,
    )


async def _record(
    session: AsyncSession,
    actor: Actor,
    action: str,
    row: SubscriptionRow,
    reseller_id: int | None,
    changes: dict[str, Any],
) -> None:
    if "connection_string" in changes:
        changes = {**changes, "connection_string": mask_url_password(changes["connection_string"])}
    owner = user_actions.Owner(row.client_id, reseller_id)
    await user_actions.record_change(
        session, actor, owner, action, Resource(API_GROUP, row.id), changes
    )


async def subscribe(
    session: AsyncSession,
    actor: Actor,
    to: Destinations,
    body: AmqpSubscriptionCreate,
    idempotency: KeyClaim,
) -> None:
    caller = actor.caller
    scoping.require_admin(caller)
    plain = new_connection_string(body.connection_string, to.outbound)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    existing = await repository.of_account(session, caller.account_id)
    refuse_another(existing, "AMQP", "update it or unsubscribe first.")
    row = SubscriptionRow(
        client_id=caller.account_id,
        connection_string_encrypted=to.box.encrypt(plain),
        exchange=body.exchange,
        routing_key=body.routing_key,
        receive_child_client_events=body.receive_child_client_events,
    )
    session.add(row)
    await session.flush()
    await _record(
        session,
        actor,
        "create",
        row,
        caller.account_reseller_id,
        body.model_dump(
            include={"connection_string", "exchange", "routing_key", "receive_child_client_events"}
        ),
    )


async def unsubscribe(session: AsyncSession, actor: Actor) -> None:
    caller = actor.caller
    scoping.require_admin(caller)
    row = await repository.of_account(session, caller.account_id, for_removal=True)
    if row is None:
        raise NotFound("The account has no AMQP subscription.")
    await _record(session, actor, "delete", row, caller.account_reseller_id, {})
    await session.delete(row)
    await session.flush()


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads subscriptions, on the request's session, with the box that opens their
    connection strings to answer them masked."""

    session: AsyncSession
    caller: Caller
    box: SecretBox


async def get(reader: Reader, subscription_id: int) -> AmqpSubscription:
    found = await repository.get_visible(reader.session, reader.caller, subscription_id)
    if found is None:
        raise NotFound("AMQP subscription not found.")
    return _out(found[0], reader.box)


async def list_(reader: Reader, page: Paging, *, client_id: int | None) -> AmqpSubscriptionList:
    count, rows = await repository.list_visible(
        reader.session, reader.caller, page, client_id=client_id
    )
    return AmqpSubscriptionList(count=count, results=[_out(r, reader.box) for r in rows])


async def update(
    session: AsyncSession,
    actor: Actor,
    to: Destinations,
    subscription_id: int,
    body: AmqpSubscriptionUpdate,
) -> AmqpSubscription:
    caller = actor.caller
    found = await repository.get_visible(session, caller, subscription_id, for_change=True)
    if found is None:
        raise NotFound("AMQP subscription not found.")
    row, owner = found
    scoping.require_admin(caller)
    sent = body.model_fields_set
    nulls: dict[str, list[str]] = {
        name: [NOT_NULL]
        for name in ("connection_string", "receive_child_client_events")
        if name in sent and getattr(body, name) is None
    }
    if nulls:
        raise ValidationError(fields=nulls)
    changes: dict[str, Any] = {}
    if "connection_string" in sent:
        plain = validated(body.connection_string or "")
        stored = to.box.decrypt(row.connection_string_encrypted)
        if has_masked_password(plain):
            # What GET answered, sent back (perhaps with another host): the password
            # stays the stored one, as the branding mail password does.
            plain = with_password_of(plain, stored)
        if plain != stored:
            check_destination(plain, to.outbound)
            row.connection_string_encrypted = to.box.encrypt(plain)
            changes["connection_string"] = plain
    for name in ("exchange", "routing_key", "receive_child_client_events"):
        if name in sent and getattr(row, name) != getattr(body, name):
            setattr(row, name, getattr(body, name))
            changes[name] = getattr(body, name)
    await session.flush()
    if changes.keys() & {"connection_string", "exchange", "routing_key"}:
        await _retry_now(session, row.id)
    if changes:
        await _record(session, actor, "update", row, owner.reseller_id, changes)
    return _out(row, to.box)


async def _retry_now(session: AsyncSession, subscription_id: int) -> None:
    """New delivery settings are tried at once: the backoff earned by the old ones
    (up to five minutes) says nothing about them."""
    await session.execute(
        sql_update(DeliveryState)
        .where(DeliveryState.subscription_id == subscription_id)
        .values(attempts=0, next_attempt_at=None, last_error=None)
    )
    await outbox_written(session)
