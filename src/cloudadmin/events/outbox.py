"""The outbox's SQL, as the dispatcher uses it: when it next has work, leasing a
subscription (or mails), reading a subscription's next batch, marking what was
delivered, backing a subscription off, giving leases back, and dropping old rows.

Leases are taken under ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so any number of
workers share the work without two serving one subscription at once; SQLite has one
dispatcher per database (events/single.py) and serialises writers anyway.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Row, and_, delete, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cloudadmin.db.base import table_of
from cloudadmin.db.dialect import upsert
from cloudadmin.db.engine import autocommit_engine
from cloudadmin.db.models import (
    DeliveryState,
    EventDelivery,
    MailMessage,
    UserActionEvent,
    WebhookDelivery,
    WebhookDeliveryState,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.queues import QUEUES, AnyQueue, Queue, Subscription

MAX_BACKOFF = 300.0
RETENTION = timedelta(days=7)
# The user-action log (GET /cloud/v1/user_actions) reads the events: they are kept this
# long, and longer while a delivery is still owed.
LOG_RETENTION = timedelta(days=365)
# Mails leased at once by one pass of the mail lane.
MAIL_BATCH = 10


def backoff_seconds(attempts: int) -> float:
    """1, 2, 4, ... seconds (with jitter), at most five minutes."""
    base = min(2.0 ** max(attempts - 1, 0), MAX_BACKOFF)
    return base * random.uniform(0.8, 1.2)


@dataclass(frozen=True)
class Backoff:
    """A subscription's failure as written: failed attempts in a row, seconds to the next."""

    attempts: int
    delay: float


class Outbox:
    """The outbox as one dispatcher (``worker_id``) sees it: its leases run ``lease``."""

    def __init__(self, engine: AsyncEngine, worker_id: str, lease: timedelta) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)
        # Looking at the outbox without a transaction (on SQLite: without the write lock).
        self.reader = autocommit_engine(engine)
        self.worker_id = worker_id
        self.lease = lease
        self._skip_locked = engine.dialect.name == "postgresql"

    async def next_due(self) -> datetime | None:
        """When the outbox next has work for this dispatcher: now (or earlier) when it has
        some, the earliest backoff or lease end otherwise, None when nothing is owed. One
        statement, outside any transaction."""
        now = utcnow()
        parts = []
        for queue in QUEUES:
            state, delivery = queue.state, queue.delivery
            pending = exists().where(
                delivery.subscription_id == state.subscription_id, delivery.delivered.is_(False)
            )
            free = or_(state.lease_until.is_(None), state.lease_until < now)
            parts += [
                # Deliveries of a subscription the dispatcher has no state for yet.
                select(delivery.id)
                .where(
                    delivery.delivered.is_(False),
                    ~exists().where(state.subscription_id == delivery.subscription_id),
                )
                .limit(1)
                .scalar_subquery(),
                select(state.subscription_id)
                .where(
                    pending,
                    free,
                    or_(state.next_attempt_at.is_(None), state.next_attempt_at <= now),
                )
                .limit(1)
                .scalar_subquery(),
                select(func.min(state.next_attempt_at)).where(pending, free).scalar_subquery(),
                select(func.min(state.lease_until)).where(pending, ~free).scalar_subquery(),
            ]
        unsent = MailMessage.sent.is_(False)
        mail_free = or_(MailMessage.lease_until.is_(None), MailMessage.lease_until < now)
        parts += [
            select(func.min(MailMessage.next_attempt_at))
            .where(unsent, mail_free)
            .scalar_subquery(),
            select(func.min(MailMessage.lease_until)).where(unsent, ~mail_free).scalar_subquery(),
        ]
        async with self.reader.connect() as conn:
            row = (await conn.execute(select(*parts))).one()
        amqp, webhook, mail = row[0:4], row[4:8], row[8:10]
        if any(q[0] is not None or q[1] is not None for q in (amqp, webhook)):
            return now
        times = [t for t in (*amqp[2:], *webhook[2:], *mail) if t is not None]
        return min(times, default=None)

    async def claim_subscription(
        self, queue: AnyQueue, *, slow: bool = True
    ) -> tuple[int, bool] | None:
        """Leases the subscription of ``queue`` due first: its id, and whether its
        destination is known to be slow. ``slow``: whether a slow one may be taken."""
        now = utcnow()
        state, delivery = queue.state, queue.delivery
        async with self.sessions() as session, session.begin():
            # Subscriptions with pending events get a state row the first time.
            missing = (
                select(delivery.subscription_id)
                .where(delivery.delivered.is_(False))
                .where(~exists().where(state.subscription_id == delivery.subscription_id))
                .distinct()
                .limit(100)
            )
            new = [{"subscription_id": sid} for sid in (await session.execute(missing)).scalars()]
            if new:
                await session.execute(upsert(self.engine.dialect.name, table_of(state), []), new)
            candidate = (
                select(state.subscription_id, state.slow)
                .where(or_(state.lease_until.is_(None), state.lease_until < now))
                .where(or_(state.next_attempt_at.is_(None), state.next_attempt_at <= now))
                .where(
                    exists().where(
                        and_(
                            delivery.subscription_id == state.subscription_id,
                            delivery.delivered.is_(False),
                        )
                    )
                )
                .order_by(state.next_attempt_at.is_not(None), state.next_attempt_at)
                .limit(1)
            )
            if not slow:
                candidate = candidate.where(state.slow.is_(False))
            if self._skip_locked:
                candidate = candidate.with_for_update(skip_locked=True)
            row = (await session.execute(candidate)).one_or_none()
            if row is None:
                return None
            sid = row.subscription_id
            await session.execute(
                update(state)
                .where(state.subscription_id == sid)
                .values(lease_owner=self.worker_id, lease_until=now + self.lease)
            )
            return sid, row.slow

    async def next_batch(
        self, queue: Queue[Subscription], sid: int, size: int
    ) -> tuple[Subscription, Sequence[Row[Any]]] | None:
        """The subscription and its next ``size`` undelivered events in id order (rows of
        the delivery's ``id``, the event's ``event_pk``, ``event_id`` and ``body``); None
        when the subscription is gone."""
        delivery = queue.delivery
        async with self.sessions() as session:
            sub = await session.get(queue.subscription, sid)
            if sub is None:
                return None
            rows = (
                await session.execute(
                    select(
                        delivery.id,
                        delivery.event_id.label("event_pk"),
                        UserActionEvent.event_id,
                        UserActionEvent.body,
                    )
                    .join(UserActionEvent, UserActionEvent.id == delivery.event_id)
                    .where(delivery.subscription_id == sid, delivery.delivered.is_(False))
                    .order_by(delivery.id)
                    .limit(size)
                )
            ).all()
        return sub, rows

    async def mark(
        self,
        queue: AnyQueue,
        sid: int,
        delivered: Sequence[Row[Any]],
        state: dict[str, object],
    ) -> None:
        """One transaction: the ``delivered`` rows of ``next_batch`` marked, and the
        subscription's state updated with ``state`` (either may be empty)."""
        async with self.sessions() as session, session.begin():
            if delivered:
                done = [r.id for r in delivered]
                acked = sorted({r.event_pk for r in delivered})
                await self._mark_delivered(session, done, acked, queue)
            if state:
                await session.execute(
                    update(queue.state).where(queue.state.subscription_id == sid).values(**state)
                )

    async def _mark_delivered(
        self, session: AsyncSession, deliveries: list[int], events: list[int], queue: AnyQueue
    ) -> None:
        """Marks deliveries (of ``queue``) done and acknowledges the events nothing is
        owed for any more, by either queue.

        The events are locked first (in id order, so lanes never deadlock): a lane
        delivering the same event to another subscription then waits, and its check
        sees this lane's deliveries; without the lock both could see the other's
        delivery pending and neither would acknowledge.
        """
        if self._skip_locked:  # PostgreSQL; SQLite serialises writers anyway
            await session.execute(
                select(UserActionEvent.id)
                .where(UserActionEvent.id.in_(events))
                .order_by(UserActionEvent.id)
                .with_for_update()
            )
        await session.execute(
            update(queue.delivery)
            .where(queue.delivery.id.in_(deliveries))
            .values(delivered=True, delivered_at=utcnow())
        )
        pending = exists().where(
            EventDelivery.event_id == UserActionEvent.id, EventDelivery.delivered.is_(False)
        )
        webhook_pending = exists().where(
            WebhookDelivery.event_id == UserActionEvent.id, WebhookDelivery.delivered.is_(False)
        )
        await session.execute(
            update(UserActionEvent)
            .where(UserActionEvent.id.in_(events), ~pending, ~webhook_pending)
            .values(acknowledged=True)
            .execution_options(synchronize_session=False)
        )

    async def back_off(
        self,
        queue: Queue[Subscription],
        sid: int,
        error: str,
        used: tuple[str, ...],
        *,
        progressed: bool,
    ) -> Backoff | None:
        """Backs the subscription off after a failure seen with the settings ``used``;
        None when it is gone or was repaired meanwhile (the update reset the backoff: the
        failure says nothing about the new settings, which are tried at once). A batch
        that ``progressed`` was a success as well: the backoff starts from its first step."""
        async with self.sessions() as session, session.begin():
            # Either state model (mypy would take their common base, which has no columns).
            state = cast(
                "DeliveryState | WebhookDeliveryState | None",
                await session.get(queue.state, sid, with_for_update=True),
            )
            if state is None:
                return None
            sub = await session.get(queue.subscription, sid, populate_existing=True)
            if sub is None or queue.settings_of(sub) != used:
                state.attempts, state.next_attempt_at, state.last_error = 0, None, None
                return None
            state.attempts = 1 if progressed else state.attempts + 1
            delay = backoff_seconds(state.attempts)
            state.next_attempt_at = utcnow() + timedelta(seconds=delay)
            state.last_error = error
            return Backoff(state.attempts, delay)

    async def release(self, queue: AnyQueue, sid: int, tried_at: datetime | None = None) -> None:
        """Ends this dispatcher's lease of the subscription. ``tried_at``: a release that
        failed then, tried again; it ends only a lease that began before (a lease runs
        ``lease``), never one taken since."""
        state = queue.state
        mine = and_(state.subscription_id == sid, state.lease_owner == self.worker_id)
        if tried_at is not None:
            mine = and_(mine, state.lease_until <= tried_at + self.lease)
        async with self.sessions() as session, session.begin():
            await session.execute(
                update(state).where(mine).values(lease_owner=None, lease_until=None)
            )

    async def release_all(self) -> None:
        """Ends every lease this dispatcher holds: subscriptions' and mails'."""
        async with self.sessions() as session, session.begin():
            for queue in QUEUES:
                await session.execute(
                    update(queue.state)
                    .where(queue.state.lease_owner == self.worker_id)
                    .values(lease_owner=None, lease_until=None)
                )
            await session.execute(
                update(MailMessage)
                .where(MailMessage.lease_owner == self.worker_id, MailMessage.sent.is_(False))
                .values(lease_owner=None, lease_until=None)
            )

    async def claim_mails(self) -> list[int]:
        """Leases the unsent mails due first (at most MAIL_BATCH): their ids."""
        now = utcnow()
        async with self.sessions() as session, session.begin():
            stmt = (
                select(MailMessage.id)
                .where(
                    MailMessage.sent.is_(False),
                    MailMessage.next_attempt_at <= now,
                    or_(MailMessage.lease_until.is_(None), MailMessage.lease_until < now),
                )
                .order_by(MailMessage.id)
                .limit(MAIL_BATCH)
            )
            if self._skip_locked:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await session.execute(stmt)).scalars())
            if ids:
                await session.execute(
                    update(MailMessage)
                    .where(MailMessage.id.in_(ids))
                    .values(lease_owner=self.worker_id, lease_until=now + self.lease)
                )
        return ids

    async def mail_tried(self, mail_id: int, error: str | None) -> MailMessage | None:
        """Writes how sending a leased mail went (``error`` None: it was sent) and ends
        the lease; a failed one is backed off. The row, None when it is gone."""
        async with self.sessions() as session, session.begin():
            row = await session.get(MailMessage, mail_id, with_for_update=True)
            if row is None:
                return None
            row.lease_owner, row.lease_until = None, None
            if error is None:
                row.sent, row.sent_at, row.last_error = True, utcnow(), None
            else:
                row.attempts += 1
                row.last_error = error
                row.next_attempt_at = utcnow() + timedelta(seconds=backoff_seconds(row.attempts))
        return row

    async def purge_delivered(
        self, older_than: timedelta = RETENTION, log_older_than: timedelta = LOG_RETENTION
    ) -> None:
        """Delivered rows and sent mails are kept for a week, then dropped; fully
        delivered events, which are the user-action log, for a year."""
        cutoff: datetime = utcnow() - older_than
        log_cutoff: datetime = utcnow() - log_older_than
        async with self.sessions() as session, session.begin():
            for delivery in (EventDelivery, WebhookDelivery):
                await session.execute(
                    delete(delivery).where(
                        delivery.delivered.is_(True), delivery.delivered_at < cutoff
                    )
                )
            await session.execute(
                delete(UserActionEvent).where(
                    UserActionEvent.created_at < log_cutoff,
                    ~exists().where(EventDelivery.event_id == UserActionEvent.id),
                    ~exists().where(WebhookDelivery.event_id == UserActionEvent.id),
                )
            )
            await session.execute(
                delete(MailMessage).where(MailMessage.sent.is_(True), MailMessage.sent_at < cutoff)
            )
