"""Recording user actions into the outbox (delivered by the events dispatcher).

Every state-changing operation calls :func:`record` inside its own transaction. What
is stored is the user-action record of the real API (``UserActionSerializer``), the one
shape both GET /cloud/v1/user_actions answers and subscribers receive; only
``acknowledged`` lives beside it, as the row's delivery state (:func:`as_record`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, false, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor
from cloudadmin.db.models import (
    AmqpSubscription,
    Client,
    EventDelivery,
    UserActionEvent,
    UserActionResource,
    WebhookDelivery,
    WebhookSubscription,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.kit.redact import redact
from cloudadmin.kit.timeparse import isoformat_z


@dataclass(frozen=True, slots=True)
class Resource:
    resource_type: str
    resource_id: str | int
    # The resource's often-searched property (a name, an address); the log's
    # `search_field` filter matches it.
    search_field: str | None = None


SEARCH_FIELD_MAX = 255  # the column's size

# The event's columns that copy a field of the record of the same name (the log's filters
# read the columns): taken from the record, so that the two cannot disagree.
_COLUMNS_FROM_RECORD = (
    "client_id",
    "user_id",
    "action_type",
    "api_group",
    "project_id",
    "region_id",
    "source_user_ip",
    "user_agent",
)


def as_record(body: dict[str, Any], *, acknowledged: bool) -> dict[str, Any]:
    """The user-action record: the stored body with the row's ``acknowledged``."""
    return {**body, "acknowledged": acknowledged}


def published_record(body: dict[str, Any]) -> dict[str, Any]:
    """The record as a subscriber receives it: it reads ``acknowledged: true`` once the
    subscriber has it, so the message equals what the log answers from then on."""
    return as_record(body, acknowledged=True)


def _resource(r: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {"resource_id": str(r.resource_id), "resource_type": r.resource_type}
    if r.search_field is not None:
        out["search_field"] = r.search_field[:SEARCH_FIELD_MAX]
    return out


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
    task_id: str | None = None,
) -> UserActionEvent:
    """Adds one event to the outbox; ``action_data`` (the changed fields) is redacted.
    ``task_id``: the task that makes the change, for a change that answers one.

    The event is owed to the account's own subscription and, when the account's
    reseller subscribed with ``receive_child_client_events``, to the reseller's too;
    and to the account's own webhook subscription (webhooks have no child events).
    """
    now = utcnow()
    event_id = str(uuid.uuid4())
    caller = actor.caller
    body: dict[str, Any] = {
        "id": event_id,
        "timestamp": isoformat_z(now),
        "client_id": client_id,
        "user_id": caller.user_id,
        "email": caller.user_email,
        "project_id": project_id,
        "region_id": region_id,
        "api_group": api_group,
        "action_type": action_type,
        "action_data": redact(action_data),
        # Nothing is priced, and the record is whole when it is written (a change that
        # a task makes is recorded when it is asked for, with its task).
        "task_id": task_id,
        "user_agent": actor.user_agent,
        "source_user_ip": actor.source_ip,
        "is_complete": True,
        "total_price": None,
        "token_id": caller.key_id,
        # API keys are issued to their own user: nobody acts on another's behalf.
        "issued_by_user_id": caller.user_id,
        "resources": [_resource(r) for r in resources],
        "request_id": actor.request_id,
    }
    event = UserActionEvent(
        **{column: body[column] for column in _COLUMNS_FROM_RECORD},
        event_id=event_id,
        reseller_id=reseller_id,
        body=body,
        created_at=now,
        acknowledged=False,
        resources=[
            UserActionResource(
                resource_type=r.resource_type,
                resource_id=str(r.resource_id),
                search_field=_resource(r).get("search_field"),
            )
            for r in resources
        ],
    )
    session.add(event)
    subscriptions = await _subscriptions_owed(session, client_id, reseller_id)
    if subscriptions:
        await session.flush()  # the event's id
        await session.execute(
            insert(EventDelivery),
            [
                {"event_id": event.id, "subscription_id": sid, "delivered": False}
                for sid in subscriptions
            ],
        )
    webhooks = await _webhooks_owed(session, client_id)
    if webhooks:
        await session.flush()
        await session.execute(
            insert(WebhookDelivery),
            [
                {"event_id": event.id, "subscription_id": sid, "delivered": False}
                for sid in webhooks
            ],
        )
    if subscriptions or webhooks:
        await outbox_written(session)  # the dispatcher is woken when this commits
    return event


@dataclass(frozen=True, slots=True)
class Owner:
    """The account an event belongs to and its reseller, where no :class:`Client` row
    is at hand (the same two attributes :func:`record_change` reads of one)."""

    id: int
    reseller_id: int | None


async def record_change(
    session: AsyncSession,
    actor: Actor,
    account: Client | Owner,
    action_type: str,
    resource: Resource,
    action_data: dict[str, Any],
    *,
    api_group: str | None = None,
    project_id: int | None = None,
    region_id: int | None = None,
    task_id: str | None = None,
) -> UserActionEvent:
    """:func:`record` of a change to one resource of ``account``: the event is the
    account's, and its reseller's to receive. The API group is the resource's type
    unless given; a cloud resource names its project and region (and the task that
    makes the change, if one does)."""
    return await record(
        session,
        actor,
        action_type=action_type,
        api_group=api_group or resource.resource_type,
        resources=[resource],
        client_id=account.id,
        reseller_id=account.reseller_id,
        action_data=action_data,
        project_id=project_id,
        region_id=region_id,
        task_id=task_id,
    )


async def apply_and_record(
    session: AsyncSession,
    actor: Actor,
    account: Client | Owner,
    resource: Resource,
    row: object,
    wanted: dict[str, Any],
) -> dict[str, Any]:
    """Sets on ``row`` the fields of ``wanted`` whose value differs, flushes, and records
    an "update" of ``resource`` with those changes when there are any; returns them."""
    changes = {name: value for name, value in wanted.items() if getattr(row, name) != value}
    for name, value in changes.items():
        setattr(row, name, value)
    await session.flush()
    if changes:
        await record_change(session, actor, account, "update", resource, changes)
    return changes


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
        and_(
            AmqpSubscription.client_id == reseller_id,
            AmqpSubscription.receive_child_client_events.is_(True),
        )
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
