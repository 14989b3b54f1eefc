"""The dispatcher: delivers the outbox to subscribers' brokers, webhooks and mail servers.

Runs inside `cloudadmin serve` and as `cloudadmin worker`. Work is claimed with short
leases taken under ``FOR UPDATE SKIP LOCKED`` (PostgreSQL), so any number of workers
share it without publishing one subscription's events concurrently; on SQLite one
dispatcher per database is enforced with a file lock. Each subscription is served by
one lane at a time, in id order, and several lanes run side by side, so a dead or slow
broker or webhook holds up only its own subscription. AMQP and webhook subscriptions
are two queues (their own deliveries and states) served by the same machinery.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import random
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Table, and_, delete, exists, or_, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cloudadmin.db.dialect import upsert
from cloudadmin.db.models import (
    AmqpSubscription,
    DeliveryState,
    EventDelivery,
    MailMessage,
    UserActionEvent,
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookSubscription,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.amqp import BrokerPool, PublishError
from cloudadmin.events.mail import MailError, MailSender
from cloudadmin.events.user_actions import published_record
from cloudadmin.events.webhooks import WebhookError, WebhookSender
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.observability.metrics import (
    EVENT_DELIVERIES,
    EVENT_DELIVERY_FAILURES,
    MAIL_FAILURES,
    MAIL_SENT,
)

log = logging.getLogger("cloudadmin.dispatcher")

MAX_BACKOFF = 300.0
RETENTION = timedelta(days=7)
# The user-action log (GET /cloud/v1/user_actions) reads the events: they are kept this
# long, and longer while a delivery is still owed.
LOG_RETENTION = timedelta(days=365)


def backoff_seconds(attempts: int) -> float:
    """1, 2, 4, ... seconds (with jitter), at most five minutes."""
    base = min(2.0 ** max(attempts - 1, 0), MAX_BACKOFF)
    return base * random.uniform(0.8, 1.2)


def _settings_of(sub: AmqpSubscription) -> tuple[str, ...]:
    """What a delivery depends on. The connection string is compared encrypted: a new
    one is encrypted with a fresh nonce, so any update of it shows."""
    return (sub.connection_string_encrypted, sub.exchange or "", sub.routing_key or "")


def _webhook_settings_of(sub: WebhookSubscription) -> tuple[str, ...]:
    return (sub.url, sub.auth_header_name, sub.auth_header_value_encrypted)


@dataclass(frozen=True)
class Queue:
    """One kind of subscription's share of the outbox: the subscriptions, the events
    owed to each, and the dispatcher's state per subscription (same columns for both
    kinds)."""

    name: str
    subscription: Any
    delivery: Any
    state: Any
    settings_of: Callable[[Any], tuple[str, ...]]


AMQP = Queue("amqp", AmqpSubscription, EventDelivery, DeliveryState, _settings_of)
WEBHOOK = Queue("webhook", WebhookSubscription, WebhookDelivery, WebhookDeliveryState,
                _webhook_settings_of)


class Dispatcher:
    def __init__(
        self,
        engine: AsyncEngine,
        secret_box: SecretBox,
        *,
        lanes: int = 8,
        batch_size: int = 200,
        poll_seconds: float = 0.5,
        lease_seconds: float = 60.0,
        worker_id: str | None = None,
        outbound: Outbound | None = None,
    ) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)
        self.secret_box = secret_box
        self.lanes = lanes
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self.lease = timedelta(seconds=lease_seconds)
        # A batch is abandoned (and retried) long before its lease could run out, so
        # no other worker ever takes over a subscription that is still publishing.
        self.publish_timeout = lease_seconds / 2
        self.delivered_count = 0
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        # Where subscribers' brokers and mail servers may be (default: public addresses).
        self.outbound = outbound or Outbound()
        self.brokers = BrokerPool(self.outbound)
        self.webhooks = WebhookSender(self.outbound)
        self.mail = MailSender(secret_box, self.outbound)
        self._skip_locked = engine.dialect.name == "postgresql"

    # ---- running ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        with contextlib.ExitStack() as held:
            if not await self._single_dispatcher_lock(stop, held):
                return  # stopped while another process was the dispatcher
            await self._run_lanes(stop)

    async def _run_lanes(self, stop: asyncio.Event) -> None:
        try:
            tasks = [asyncio.create_task(self._amqp_lane(stop)) for _ in range(self.lanes)]
            tasks.append(asyncio.create_task(self._mail_lane(stop)))
            tasks.append(asyncio.create_task(self._housekeeping(stop)))
            await stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            log.info("dispatcher %s stopping; delivered %d events",
                     self.worker_id, self.delivered_count)
        finally:
            await self.brokers.close()
            await self.webhooks.close()

    async def _single_dispatcher_lock(
        self, stop: asyncio.Event, held: contextlib.ExitStack
    ) -> bool:
        """On SQLite, wait until this process holds the database's dispatcher lock (kept
        open in ``held``); False when stopped first. Other databases need no lock."""
        if self.engine.dialect.name != "sqlite":
            return True
        database = make_url(str(self.engine.url)).database or ":memory:"
        if database == ":memory:":
            return True
        handle = held.enter_context(
            Path(f"{database}.dispatcher.lock").open("a")  # noqa: ASYNC230, SIM115
        )
        while not stop.is_set():
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:  # another process dispatches; take over if it dies
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 5)
        return False

    async def _idle(self, stop: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), self.poll_seconds)

    async def _amqp_lane(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                worked = await self.deliver_once()
            except Exception:
                log.exception("dispatcher lane failed; retrying")
                worked = False
            if not worked:
                await self._idle(stop)

    async def _mail_lane(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                worked = await self.send_mail_once()
            except Exception:
                log.exception("mail lane failed; retrying")
                worked = False
            if not worked:
                await self._idle(stop)

    async def _housekeeping(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.purge_delivered()
            except Exception:
                log.exception("housekeeping failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 600)

    # ---- AMQP ------------------------------------------------------------------

    async def claim_subscription(self, queue: Queue = AMQP) -> int | None:
        now = utcnow()
        async with self.sessions() as session, session.begin():
            # Subscriptions with pending events get a state row the first time.
            missing = (
                select(queue.delivery.subscription_id)
                .where(queue.delivery.delivered.is_(False))
                .where(~exists().where(queue.state.subscription_id
                                       == queue.delivery.subscription_id))
                .distinct()
                .limit(100)
            )
            new = [{"subscription_id": sid} for sid in (await session.execute(missing)).scalars()]
            if new:
                table = queue.state.__table__
                assert isinstance(table, Table)
                await session.execute(upsert(self.engine.dialect.name, table, []), new)
            candidate = (
                select(queue.state.subscription_id)
                .where(or_(queue.state.lease_until.is_(None), queue.state.lease_until < now))
                .where(or_(queue.state.next_attempt_at.is_(None),
                           queue.state.next_attempt_at <= now))
                .where(exists().where(and_(
                    queue.delivery.subscription_id == queue.state.subscription_id,
                    queue.delivery.delivered.is_(False))))
                .order_by(queue.state.next_attempt_at.is_not(None),
                          queue.state.next_attempt_at)
                .limit(1)
            )
            if self._skip_locked:
                candidate = candidate.with_for_update(skip_locked=True)
            sid = (await session.execute(candidate)).scalar_one_or_none()
            if sid is None:
                return None
            await session.execute(
                update(queue.state)
                .where(queue.state.subscription_id == sid)
                .values(lease_owner=self.worker_id, lease_until=now + self.lease)
            )
            return sid

    async def deliver_once(self) -> bool:
        """Claims one AMQP and one webhook subscription and delivers one batch of the
        events of each. False when idle."""
        worked = await self._deliver_once(AMQP)
        return await self._deliver_once(WEBHOOK) or worked

    async def _deliver_once(self, queue: Queue) -> bool:
        sid = await self.claim_subscription(queue)
        if sid is None:
            return False
        try:
            if queue is AMQP:
                await self._deliver_batch(sid)
            else:
                await self._deliver_webhook_batch(sid)
        finally:
            await self._release(sid, queue)
        return True

    async def _deliver_batch(self, sid: int) -> None:
        async with self.sessions() as session:
            sub = await session.get(AmqpSubscription, sid)
            if sub is None:
                return
            rows = (
                await session.execute(
                    select(EventDelivery.id, EventDelivery.event_id.label("event_pk"),
                           UserActionEvent.event_id, UserActionEvent.body)
                    .join(UserActionEvent, UserActionEvent.id == EventDelivery.event_id)
                    .where(EventDelivery.subscription_id == sid,
                           EventDelivery.delivered.is_(False))
                    .order_by(EventDelivery.id)
                    .limit(self.batch_size)
                )
            ).all()
            url = self.secret_box.decrypt(sub.connection_string_encrypted)
            exchange, routing_key = sub.exchange, sub.routing_key
            used = _settings_of(sub)
        if not rows:
            return
        try:
            confirmed = await asyncio.wait_for(
                self.brokers.publish(
                    url, exchange, routing_key,
                    [(r.event_id, published_record(r.body)) for r in rows],
                ),
                self.publish_timeout,
            )
        except PublishError as exc:
            await self._failed(sid, str(exc), used)
            return
        except TimeoutError:
            await self.brokers.drop(url)
            await self._failed(sid, f"no confirmation within {self.publish_timeout:.0f}s", used)
            return
        self.delivered_count += confirmed
        EVENT_DELIVERIES.labels(AMQP.name).inc(confirmed)
        done = [r.id for r in rows[:confirmed]]
        acked = sorted({r.event_pk for r in rows[:confirmed]})
        async with self.sessions() as session, session.begin():
            await self._mark_delivered(session, done, acked)
            if confirmed == len(rows):
                await session.execute(
                    update(DeliveryState).where(DeliveryState.subscription_id == sid)
                    .values(attempts=0, last_error=None, next_attempt_at=None)
                )
        if confirmed < len(rows):
            await self._failed(sid, "the broker did not confirm every message", used)

    async def _mark_delivered(
        self, session: AsyncSession, deliveries: list[int], events: list[int],
        queue: Queue = AMQP,
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
                select(UserActionEvent.id).where(UserActionEvent.id.in_(events))
                .order_by(UserActionEvent.id).with_for_update()
            )
        await session.execute(
            update(queue.delivery).where(queue.delivery.id.in_(deliveries))
            .values(delivered=True, delivered_at=utcnow())
        )
        pending = exists().where(EventDelivery.event_id == UserActionEvent.id,
                                 EventDelivery.delivered.is_(False))
        webhook_pending = exists().where(WebhookDelivery.event_id == UserActionEvent.id,
                                         WebhookDelivery.delivered.is_(False))
        await session.execute(
            update(UserActionEvent)
            .where(UserActionEvent.id.in_(events), ~pending, ~webhook_pending)
            .values(acknowledged=True)
            .execution_options(synchronize_session=False)
        )

    async def _failed(
        self, sid: int, error: str, used: tuple[str, ...], queue: Queue = AMQP
    ) -> None:
        EVENT_DELIVERY_FAILURES.labels(queue.name).inc()
        async with self.sessions() as session, session.begin():
            state = await session.get(queue.state, sid, with_for_update=True)
            if state is None:
                return
            sub = await session.get(queue.subscription, sid, populate_existing=True)
            if sub is None or queue.settings_of(sub) != used:
                # Repaired while this batch was failing (the update reset the backoff):
                # the failure says nothing about the new settings; try them at once.
                state.attempts, state.next_attempt_at, state.last_error = 0, None, None
                return
            state.attempts += 1
            delay = backoff_seconds(state.attempts)
            state.next_attempt_at = utcnow() + timedelta(seconds=delay)
            state.last_error = error
        log.warning("%s subscription %s: delivery failed (attempt %s, next in %.0fs): %s",
                    queue.name, sid, state.attempts, delay, error,
                    extra={"subscription_id": sid, "attempts": state.attempts})

    async def _release(self, sid: int, queue: Queue = AMQP) -> None:
        async with self.sessions() as session, session.begin():
            await session.execute(
                update(queue.state)
                .where(queue.state.subscription_id == sid,
                       queue.state.lease_owner == self.worker_id)
                .values(lease_owner=None, lease_until=None)
            )

    # ---- webhooks --------------------------------------------------------------

    async def _deliver_webhook_batch(self, sid: int) -> None:
        async with self.sessions() as session:
            sub = await session.get(WebhookSubscription, sid)
            if sub is None:
                return
            rows = (
                await session.execute(
                    select(WebhookDelivery.id, WebhookDelivery.event_id.label("event_pk"),
                           UserActionEvent.event_id, UserActionEvent.body)
                    .join(UserActionEvent, UserActionEvent.id == WebhookDelivery.event_id)
                    .where(WebhookDelivery.subscription_id == sid,
                           WebhookDelivery.delivered.is_(False))
                    .order_by(WebhookDelivery.id)
                    .limit(self.batch_size)
                )
            ).all()
            url, header_name = sub.url, sub.auth_header_name
            header_value = self.secret_box.decrypt(sub.auth_header_value_encrypted)
            used = _webhook_settings_of(sub)
        if not rows:
            return
        error: str | None = None
        try:
            accepted = await self.webhooks.post(
                url, header_name, header_value,
                [(r.event_id, published_record(r.body)) for r in rows],
                budget=self.publish_timeout,
            )
        except WebhookError as exc:
            accepted, error = exc.accepted, str(exc)
        self.delivered_count += accepted
        EVENT_DELIVERIES.labels(WEBHOOK.name).inc(accepted)
        done = [r.id for r in rows[:accepted]]
        acked = sorted({r.event_pk for r in rows[:accepted]})
        async with self.sessions() as session, session.begin():
            if done:
                await self._mark_delivered(session, done, acked, WEBHOOK)
            if error is None:
                await session.execute(
                    update(WebhookDeliveryState)
                    .where(WebhookDeliveryState.subscription_id == sid)
                    .values(attempts=0, last_error=None, next_attempt_at=None)
                )
        if error is not None:
            await self._failed(sid, error, used, WEBHOOK)

    async def purge_delivered(
        self, older_than: timedelta = RETENTION, log_older_than: timedelta = LOG_RETENTION
    ) -> None:
        """Delivered rows and sent mails are kept for a week, then dropped; fully
        delivered events, which are the user-action log, for a year."""
        cutoff: datetime = utcnow() - older_than
        log_cutoff: datetime = utcnow() - log_older_than
        async with self.sessions() as session, session.begin():
            await session.execute(
                delete(EventDelivery).where(EventDelivery.delivered.is_(True),
                                            EventDelivery.delivered_at < cutoff)
            )
            await session.execute(
                delete(WebhookDelivery).where(WebhookDelivery.delivered.is_(True),
                                              WebhookDelivery.delivered_at < cutoff)
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

    # ---- mail ------------------------------------------------------------------

    async def send_mail_once(self) -> bool:
        now = utcnow()
        async with self.sessions() as session, session.begin():
            stmt = (
                select(MailMessage.id)
                .where(MailMessage.sent.is_(False), MailMessage.next_attempt_at <= now,
                       or_(MailMessage.lease_until.is_(None), MailMessage.lease_until < now))
                .order_by(MailMessage.id)
                .limit(10)
            )
            if self._skip_locked:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await session.execute(stmt)).scalars())
            if not ids:
                return False
            await session.execute(
                update(MailMessage).where(MailMessage.id.in_(ids))
                .values(lease_owner=self.worker_id, lease_until=now + self.lease)
            )
        for mail_id in ids:
            await self._send_one(mail_id)
        return True

    async def _send_one(self, mail_id: int) -> None:
        async with self.sessions() as session:
            message = await session.get(MailMessage, mail_id)
            if message is None:
                return
            try:
                await self.mail.send(session, message)
                error = None
            except MailError as exc:  # try again later
                error = str(exc)
        async with self.sessions() as session, session.begin():
            row = await session.get(MailMessage, mail_id, with_for_update=True)
            if row is None:
                return
            row.lease_owner, row.lease_until = None, None
            if error is None:
                row.sent, row.sent_at, row.last_error = True, utcnow(), None
                MAIL_SENT.inc()
                return
            MAIL_FAILURES.inc()
            row.attempts += 1
            row.last_error = error
            row.next_attempt_at = utcnow() + timedelta(seconds=backoff_seconds(row.attempts))
        log.warning("mail %s to reseller %s failed (attempt %s): %s",
                    mail_id, row.reseller_id, row.attempts, error)
