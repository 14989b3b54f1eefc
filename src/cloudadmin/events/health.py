"""The delivery health of the AMQP and webhook subscriptions a caller may see (the
Admin Portal's Events section, docs/portal.md), and "retry now".

Health is what `cloudadmin events status` shows, per subscription: how many events it
is owed (its backlog) and since when the oldest waits, and the dispatcher's state of it
(failed attempts in a row, the last failure's reason, when it is tried next). The
reasons are classes, never the far end's own words (events/amqp.py, events/webhooks.py).
Secrets stay masked as the API answers them: an AMQP connection string's password, a
webhook's header value.

"Retry now" ends a subscription's backoff: its next attempt is now, and the dispatcher
is woken when the transaction commits (events/wakeup.py). The failure count is kept, so
a destination that still fails backs off as far as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require, visible_accounts
from cloudadmin.db.models import Client
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound
from cloudadmin.events.queues import AMQP, WEBHOOK, AnyQueue
from cloudadmin.events.status import pending_by_subscription
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.redact import MASK, mask_url_password

# The kinds of subscription by the name pages and URLs use.
QUEUES: dict[str, AnyQueue] = {"amqp": AMQP, "webhook": WEBHOOK}


@dataclass(frozen=True, slots=True)
class SubscriptionHealth:
    kind: str  # "amqp" or "webhook"
    subscription_id: int
    client_id: int
    client_name: str
    # Where deliveries go, secrets masked: the AMQP connection string (password ***) or
    # the webhook's URL; ``detail``: the exchange and routing key, or the header (***).
    destination: str
    detail: str
    backlog: int
    oldest_pending_at: datetime | None
    attempts: int
    last_error: str | None
    next_attempt_at: datetime | None
    slow: bool

    @property
    def failing(self) -> bool:
        """Its last attempt failed (it waits for its backoff, or is being tried)."""
        return self.attempts > 0

    def oldest_pending_seconds(self, now: datetime) -> float | None:
        if self.oldest_pending_at is None:
            return None
        return max((now - self.oldest_pending_at).total_seconds(), 0.0)


@dataclass(frozen=True, slots=True)
class HealthPage:
    count: int
    items: list[SubscriptionHealth]


def _queue(kind: str) -> AnyQueue:
    queue = QUEUES.get(kind)
    if queue is None:
        raise NotFound("Subscription not found.")
    return queue


def _conditions(
    caller: Caller, sub: Any, state: Any, *, client_id: int | None, failing_only: bool
) -> list[ColumnElement[bool]]:
    out = [visible_accounts(caller, sub.client_id)]
    if client_id is not None:
        out.append(sub.client_id == client_id)
    if failing_only:
        out.append(func.coalesce(state.attempts, 0) > 0)
    return out


def _describe(kind: str, sub: Any, box: SecretBox) -> tuple[str, str]:
    if kind == "amqp":
        where = mask_url_password(box.decrypt(sub.connection_string_encrypted))
        detail = f"exchange {sub.exchange or '(default)'}, routing key {sub.routing_key or '-'}"
        return where, detail
    return str(sub.url), f"header {sub.auth_header_name}: {MASK}"


async def subscriptions_health(
    session: AsyncSession,
    caller: Caller,
    box: SecretBox,
    kind: str,
    *,
    limit: int,
    offset: int,
    client_id: int | None = None,
    failing_only: bool = False,
) -> HealthPage:
    """The subscriptions of ``kind`` ("amqp" or "webhook") of the accounts the caller
    may see (``visible_accounts``: docs/access.md, "Kinds of caller"), failing ones
    first, then by the age of their oldest owed event; ``client_id`` narrows to one
    account, never widens."""
    queue = _queue(kind)
    sub: Any = queue.subscription
    state: Any = queue.state
    pending = pending_by_subscription(queue)
    where = _conditions(caller, sub, state, client_id=client_id, failing_only=failing_only)
    counted = (
        select(func.count())
        .select_from(sub)
        .outerjoin(state, state.subscription_id == sub.id)
        .where(*where)
    )
    total = int((await session.execute(counted)).scalar_one())
    failing_first = case((func.coalesce(state.attempts, 0) > 0, 0), else_=1)
    stmt = (
        select(
            sub,
            Client.company_name,
            func.coalesce(pending.c.n, 0),
            pending.c.oldest,
            state.attempts,
            state.next_attempt_at,
            state.last_error,
            state.slow,
        )
        .join(Client, Client.id == sub.client_id)
        .outerjoin(pending, pending.c.sid == sub.id)
        .outerjoin(state, state.subscription_id == sub.id)
        .where(*where)
        .order_by(failing_first, pending.c.oldest.is_(None), pending.c.oldest, sub.id)
        .limit(limit)
        .offset(offset)
    )
    items = []
    for row in (await session.execute(stmt)).all():
        found, name, backlog, oldest, attempts, next_at, last_error, slow = row
        destination, detail = _describe(kind, found, box)
        items.append(
            SubscriptionHealth(
                kind=kind,
                subscription_id=found.id,
                client_id=found.client_id,
                client_name=name,
                destination=destination,
                detail=detail,
                backlog=int(backlog),
                oldest_pending_at=oldest,
                attempts=attempts or 0,
                last_error=last_error,
                next_attempt_at=next_at,
                slow=bool(slow),
            )
        )
    return HealthPage(count=total, items=items)


async def retry_now(session: AsyncSession, caller: Caller, kind: str, subscription_id: int) -> bool:
    """Ends the backoff of a subscription the caller may see: its next attempt is now,
    and the dispatcher is woken once the transaction commits. Operators and resellers
    only (403 for anyone else, before any lookup); another tenant's subscription, or
    none, is 404. True when a backoff was ended (False: nothing waited for one)."""
    require(caller, CallerKind.reseller)
    queue = _queue(kind)
    sub: Any = queue.subscription
    state: Any = queue.state
    visible = (
        await session.execute(
            select(sub.id).where(sub.id == subscription_id, visible_accounts(caller, sub.client_id))
        )
    ).first()
    if visible is None:
        raise NotFound("Subscription not found.")
    result: Any = await session.execute(
        update(state)
        .where(state.subscription_id == subscription_id, state.next_attempt_at.is_not(None))
        .values(next_attempt_at=utcnow())
    )
    await outbox_written(session)
    return bool(result.rowcount)
