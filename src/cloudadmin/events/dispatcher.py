"""The dispatcher: delivers the outbox to subscribers' brokers, webhooks and mail servers.

Runs inside `cloudadmin serve` and as `cloudadmin worker`. Work is claimed with short
leases taken under ``FOR UPDATE SKIP LOCKED`` (PostgreSQL), so any number of workers
share it without publishing one subscription's events concurrently; on SQLite one
dispatcher per database is enforced with a file lock, and on PostgreSQL one per
`serve` (whatever its ``--workers``) with an advisory lock (events/single.py). Each
subscription is served by one lane at a time, in id order, and several lanes run side
by side, so a dead or slow broker or webhook holds up only its own subscription. AMQP
and webhook subscriptions are two queues (their own deliveries and states) served by
the same machinery.

Idle lanes do not poll: they wait for the doorbell, which one task (the waker) rings
when the outbox may have work (a ring wakes one lane; one that finds work wakes the
next). It rings on a wake-up (events/wakeup.py: PostgreSQL's
NOTIFY, a commit in this process, a lane's failure), and when the earliest backoff or
lease comes due; and, as a fallback for writes that could not wake it, after a while:
``idle_poll_seconds`` while LISTENing, else a poll that backs off from
``poll_seconds`` to ``idle_backoff_max_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import socket
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cloudadmin.db.base import table_of
from cloudadmin.db.dialect import upsert
from cloudadmin.db.engine import autocommit_engine
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
from cloudadmin.db.unavailable import is_unavailable
from cloudadmin.events.amqp import BrokerPool, PublishError
from cloudadmin.events.failure_log import FailureLog
from cloudadmin.events.mail import MailError, MailSender, PlatformMailServer
from cloudadmin.events.single import DispatcherLock
from cloudadmin.events.user_actions import published_record
from cloudadmin.events.wakeup import Listener, subscribe_local
from cloudadmin.events.webhooks import WebhookError, WebhookSender
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.observability.metrics import (
    DISPATCHER_ACTIVE,
    DISPATCHER_LAST_PROGRESS,
    DISPATCHER_STALLED,
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
# Cleanup that runs while a lane ends (releasing its lease) gets this long: it must not
# hold up a stop or a lost lock when the database is away.
RELEASE_SECONDS = 5.0
# How long the dispatcher waits for its cancelled lanes before it carries on without them.
LANE_END_SECONDS = 10.0


def _database_away(exc: BaseException) -> bool:
    """A write that failed because the database went away (or did not answer in time),
    not because of what it wrote: worth trying again once it is back."""
    return isinstance(exc, OSError | TimeoutError) or is_unavailable(exc)


def _being_cancelled() -> bool:
    """Whether the running task has been asked to stop. A cancellation may surface as
    another error (a rollback on a dead connection raising while the task unwinds): that
    error must not be taken for a failure to retry."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


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


# Sends one batch of ``(message_id, record)`` pairs in order: how many leading ones the
# far end took, and why not the rest (None when the batch is done, or cut short only by
# the time budget: the rest go in the next batch, no failure). It tells ``Progress`` the
# count taken so far whenever the far end takes more.
Progress = Callable[[int], None]
Send = Callable[[list[tuple[str, dict[str, Any]]], Progress], Awaitable[tuple[int, str | None]]]

AMQP = Queue("amqp", AmqpSubscription, EventDelivery, DeliveryState, _settings_of)
WEBHOOK = Queue(
    "webhook", WebhookSubscription, WebhookDelivery, WebhookDeliveryState, _webhook_settings_of
)


# A destination that goes this long without taking a message (a webhook that answers
# slowly or not at all, a broker that does not confirm or connect) is slow.
SLOW_SECONDS = 2.0


class SlowLanes:
    """How many of a dispatcher's lanes serve slow destinations: at most ``limit``
    (half of them), so the others stay free for everyone else however many tenants'
    destinations are slow. Per process; which destinations are slow is kept in the
    database (the states' ``slow``), so every worker knows it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy = 0

    def take(self) -> bool:
        if self.busy >= self.limit:
            return False
        self.busy += 1
        return True

    def give(self) -> None:
        self.busy -= 1


class Doorbell:
    """Wakes one idle lane per ring; a lane that a ring woke and that found work rings
    again, so lanes join one after another while there is work for them, and a single
    event costs one extra look, not one per lane. A lane notes ``generation`` before it
    looks for work and does not wait if a ring came meanwhile: none is missed."""

    def __init__(self) -> None:
        self.generation = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    def ring(self) -> None:
        self.generation += 1
        while self._waiting:
            lane = self._waiting.popleft()
            if not lane.done():  # not cancelled
                lane.set_result(None)
                return

    def ring_all(self) -> None:
        """Wakes every idle lane (the dispatcher is stopping: they end)."""
        self.generation += 1
        while self._waiting:
            lane = self._waiting.popleft()
            if not lane.done():
                lane.set_result(None)

    async def wait(self, since: int) -> None:
        if self.generation != since:
            return
        woken = asyncio.get_running_loop().create_future()
        self._waiting.append(woken)
        await woken


class Dispatcher:
    # No progress for this long makes a destination slow (tests shorten it).
    slow_seconds: float = SLOW_SECONDS

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
        idle_poll_seconds: float = 30.0,
        idle_backoff_max_seconds: float = 5.0,
        exclusive: bool = False,
        stall_seconds: float = 120.0,
        platform_mail: PlatformMailServer | None = None,
    ) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)
        # Looking at the outbox without a transaction (on SQLite: without the write lock).
        self.reader = autocommit_engine(engine)
        self.secret_box = secret_box
        self.lanes = lanes
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self.idle_poll_seconds = idle_poll_seconds
        self.idle_backoff_max_seconds = max(idle_backoff_max_seconds, poll_seconds)
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
        self.mail = MailSender(secret_box, self.outbound, platform_mail)
        self.failures = FailureLog(log)
        self._skip_locked = engine.dialect.name == "postgresql"
        # Inside `serve` (several processes of one service): one dispatcher among them.
        self.lock = DispatcherLock(engine, exclusive=exclusive)
        self.bell = Doorbell()  # the delivery lanes'
        self.mail_bell = Doorbell()
        self._wake = asyncio.Event()  # set: look at the outbox now
        self._found_work = False
        self.looks = 0  # times the waker rang (tests and benchmarks read it)
        self.listener: Listener | None = None  # while running on PostgreSQL
        # The watchdog: while dispatching, the last time a lane finished a pass or the
        # waker saw nothing due; past ``stall_seconds`` with events due, it warns.
        self.stall_seconds = stall_seconds
        self.dispatching = False
        self.stalled = False
        self._progress_at = time.monotonic()
        # Leases a lane could not release (the database was away), with when it tried:
        # released later, so that the subscription does not wait for the lease to end.
        self._unreleased: dict[tuple[str, int], tuple[Queue, datetime]] = {}
        # Tasks that did not end when cancelled (LANE_END_SECONDS): never waited for again.
        self._stragglers: set[asyncio.Task[None]] = set()
        # Set while the lanes end (the stop, a lost lock): each ends after its pass.
        self._draining = False

    # ---- running ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        watchdog = asyncio.create_task(self._watchdog(stop))
        try:
            while not stop.is_set():
                if not await self.lock.acquire(stop, self.worker_id):
                    return  # stopped while another process was the dispatcher
                log.info("dispatcher %s started", self.worker_id)
                await self._run_lanes(stop)
                if self.lock.lost.is_set() and not stop.is_set():
                    log.error(
                        "dispatcher %s lost its lock (database connection); "
                        "stopped its lanes until it holds it again",
                        self.worker_id,
                    )
                    # Whoever dispatches next (this process or one standing by) finds
                    # the subscriptions free, not leased for another minute.
                    await self._settle_leases(stop)
        finally:
            watchdog.cancel()
            await self.lock.release()
            await self.brokers.close()
            await self.webhooks.close()

    async def _run_lanes(self, stop: asyncio.Event) -> None:
        listener = self.listener = (
            Listener(self.lock.url, self._wake)
            if self.engine.dialect.name == "postgresql"
            else None
        )
        unsubscribe = subscribe_local(self._wake)
        self._draining = False
        lanes = [
            asyncio.create_task(self._lane(self.deliver_once, self.bell)) for _ in range(self.lanes)
        ]
        lanes.append(asyncio.create_task(self._lane(self.send_mail_once, self.mail_bell)))
        others = [
            asyncio.create_task(self._housekeeping(stop)),
            asyncio.create_task(self._waker(stop, listener)),
        ]
        tasks = lanes + others
        self._dispatching(True)
        try:
            ended = asyncio.create_task(stop.wait())
            lost = asyncio.create_task(self.lock.lost.wait())
            await asyncio.wait([ended, lost], return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
            lost.cancel()
            for task in others:
                task.cancel()
            await self._drained(lanes)
            for task in lanes:
                task.cancel()
            await self._ended(tasks)
            log.info(
                "dispatcher %s stopping; delivered %d events", self.worker_id, self.delivered_count
            )
        finally:
            for task in tasks:  # cancelled itself (the stop's grace ran out): so are they
                task.cancel()
            self._dispatching(False)
            unsubscribe()
            if listener is not None:
                await listener.close()

    async def _drained(self, lanes: list[asyncio.Task[None]]) -> None:
        """Lets every lane finish the pass it is in, then end, for at most a lease. A pass
        cut short after its destination took a batch would leave the batch unmarked, and
        sent again by whoever takes the subscription next: a duplicate for every lane at
        every stop or lost lock. A lane's lease keeps any other dispatcher off its
        subscription meanwhile, and the pass marks what was taken while the lease holds
        (``_while_leased``). Lanes still at work after a lease are cancelled."""
        self._draining = True
        self.bell.ring_all()
        self.mail_bell.ring_all()
        await asyncio.wait(lanes, timeout=self.lease.total_seconds())

    async def _ended(self, tasks: list[asyncio.Task[None]]) -> None:
        """Waits for cancelled tasks to end, at most LANE_END_SECONDS: a task stuck in
        cleanup must not keep the dispatcher from taking its lock back, nor a process
        from stopping. One that is still running is left to end by itself."""
        done, pending = await asyncio.wait(tasks, timeout=LANE_END_SECONDS)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("dispatcher task ended with an error", exc_info=task.exception())
        if pending:
            log.error(
                "dispatcher %s: %d of its tasks did not end within %g s of being cancelled; "
                "carrying on without them",
                self.worker_id,
                len(pending),
                LANE_END_SECONDS,
            )
            self._stragglers |= pending
            for task in pending:
                task.add_done_callback(self._stragglers.discard)

    async def _lane(self, work: Callable[[], Awaitable[bool]], bell: Doorbell) -> None:
        """Works while there is work, then waits for the doorbell; ends between passes
        once the dispatcher stops (``_drained``)."""
        woken = False
        while not self._draining:
            seen = bell.generation
            try:
                if self._unreleased:
                    await self._release_pending()
                worked = await work()
            except Exception as exc:
                if _being_cancelled():  # the stop or a lost lock: the lane ends, cancelled,
                    raise asyncio.CancelledError from exc  # whatever its unwinding raised
                log.exception("dispatcher lane failed; retrying")
                worked = False
            else:
                self._progressed()
            if worked:
                self._found_work = True
                if woken:
                    bell.ring()  # there may be more: the next idle lane looks too
                woken = False
            else:
                await bell.wait(seen)
                woken = True

    def _ring(self) -> None:
        self.looks += 1
        self.bell.ring()
        self.mail_bell.ring()

    async def _waker(self, stop: asyncio.Event, listener: Listener | None) -> None:
        """Rings the doorbell when the outbox may have work: on a wake-up, when a backoff
        or lease comes due, and at the fallback poll. Without notifications (SQLite, or
        the LISTEN connection down) that poll starts at ``poll_seconds`` and doubles
        while nothing turns up, up to ``idle_backoff_max_seconds``."""
        backoff = self.poll_seconds
        woken = True  # look once at start
        while not stop.is_set():
            if listener is not None and await listener.ensure():
                woken = True  # notifications may have been missed while not listening
            self._wake.clear()
            if woken:
                self._ring()
            try:
                due = await self.next_due()
            except Exception:  # the database is away: let the lanes try (and log)
                if _being_cancelled():
                    raise
                log.debug("dispatcher could not look at the outbox", exc_info=True)
                due = utcnow()
            now = utcnow()
            if due is None or due > now:
                self._progressed()  # nothing due: idle, not stuck
            if not woken and due is not None and due <= now:
                self._ring()
            listening = listener is not None and listener.healthy
            timeout = self.idle_poll_seconds if listening else backoff
            if due is not None and due > now:
                timeout = min(timeout, (due - now).total_seconds() + 0.01)
            woken = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
                woken = True
            if woken or self._found_work:
                backoff = self.poll_seconds
            else:
                backoff = min(backoff * 2, self.idle_backoff_max_seconds)
            self._found_work = False

    def wake(self) -> None:
        """Look at the outbox now (a lane scheduled a retry, for instance)."""
        self._wake.set()

    async def next_due(self) -> datetime | None:
        """When the outbox next has work for this dispatcher: now (or earlier) when it has
        some, the earliest backoff or lease end otherwise, None when nothing is owed. One
        statement, outside any transaction."""
        now = utcnow()
        parts = []
        for queue in (AMQP, WEBHOOK):
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

    async def _housekeeping(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.purge_delivered()
            except Exception:
                if _being_cancelled():
                    raise
                log.exception("housekeeping failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 600)

    # ---- AMQP ------------------------------------------------------------------

    @functools.cached_property
    def slow_lanes(self) -> SlowLanes:
        return SlowLanes(max(1, self.lanes // 2))

    async def claim_subscription(
        self, queue: Queue = AMQP, *, slow: bool = True
    ) -> tuple[int, bool] | None:
        """Leases the subscription of ``queue`` due first: its id, and whether its
        destination is known to be slow. ``slow``: whether a slow one may be taken."""
        now = utcnow()
        async with self.sessions() as session, session.begin():
            # Subscriptions with pending events get a state row the first time.
            missing = (
                select(queue.delivery.subscription_id)
                .where(queue.delivery.delivered.is_(False))
                .where(
                    ~exists().where(queue.state.subscription_id == queue.delivery.subscription_id)
                )
                .distinct()
                .limit(100)
            )
            new = [{"subscription_id": sid} for sid in (await session.execute(missing)).scalars()]
            if new:
                await session.execute(
                    upsert(self.engine.dialect.name, table_of(queue.state), []), new
                )
            candidate = (
                select(queue.state.subscription_id, queue.state.slow)
                .where(or_(queue.state.lease_until.is_(None), queue.state.lease_until < now))
                .where(
                    or_(queue.state.next_attempt_at.is_(None), queue.state.next_attempt_at <= now)
                )
                .where(
                    exists().where(
                        and_(
                            queue.delivery.subscription_id == queue.state.subscription_id,
                            queue.delivery.delivered.is_(False),
                        )
                    )
                )
                .order_by(queue.state.next_attempt_at.is_not(None), queue.state.next_attempt_at)
                .limit(1)
            )
            if not slow:
                candidate = candidate.where(queue.state.slow.is_(False))
            if self._skip_locked:
                candidate = candidate.with_for_update(skip_locked=True)
            row = (await session.execute(candidate)).one_or_none()
            if row is None:
                return None
            # Queue.state is any of the state models: its columns' types are not known here.
            sid: int = row.subscription_id
            await session.execute(
                update(queue.state)
                .where(queue.state.subscription_id == sid)
                .values(lease_owner=self.worker_id, lease_until=now + self.lease)
            )
            return sid, bool(row.slow)

    async def deliver_once(self) -> bool:
        """Claims one AMQP and one webhook subscription and delivers one batch of the
        events of each. False when idle."""
        worked = await self._deliver_once(AMQP, self._amqp_sender)
        return await self._deliver_once(WEBHOOK, self._webhook_sender) or worked

    async def _deliver_once(self, queue: Queue, sender: Callable[[Any], Send]) -> bool:
        # The lease runs from before the claim's clock reading: it ends after this.
        leased_at = time.monotonic()
        # A lane takes a slow destination only with one of the slow lanes' places.
        place = self.slow_lanes.take()
        try:
            claimed = await self.claim_subscription(queue, slow=place)
        except BaseException:
            self._give_slow_place(place)
            raise
        if claimed is None or not claimed[1]:
            self._give_slow_place(place)
            place = False
        if claimed is None:
            return False
        sid, slow = claimed
        try:
            await self._deliver_batch(
                queue, sid, sender, slow=slow, place=place, leased_at=leased_at
            )
        finally:
            await self._release_quietly(sid, queue)
        return True

    async def _deliver_batch(
        self,
        queue: Queue,
        sid: int,
        sender: Callable[[Any], Send],
        *,
        slow: bool = False,
        place: bool = False,
        leased_at: float | None = None,
    ) -> None:
        """Sends the next batch of the subscription's events in id order, marks what the
        far end took as delivered and counts a failure for the rest. The kinds differ
        only in how a batch is sent: ``sender`` makes the sending of one subscription.
        ``slow``: its destination is known to be slow; ``place``: this lane holds one of
        the slow lanes' places, given back here; ``leased_at``: when (``time.monotonic``)
        the lease was taken, by default now."""
        if leased_at is None:
            leased_at = time.monotonic()
        try:
            async with self.sessions() as session:
                sub = await session.get(queue.subscription, sid)
                if sub is None:
                    return
                rows = (
                    await session.execute(
                        select(
                            queue.delivery.id,
                            queue.delivery.event_id.label("event_pk"),
                            UserActionEvent.event_id,
                            UserActionEvent.body,
                        )
                        .join(UserActionEvent, UserActionEvent.id == queue.delivery.event_id)
                        .where(
                            queue.delivery.subscription_id == sid,
                            queue.delivery.delivered.is_(False),
                        )
                        .order_by(queue.delivery.id)
                        .limit(self.batch_size)
                    )
                ).all()
                # Read (and decrypted) while the row is at hand; sent after the session.
                send = sender(sub)
                used = queue.settings_of(sub)
            if not rows:
                return
            messages = [(r.event_id, published_record(r.body)) for r in rows]
            accepted, error, stalled, abandoned, place = await self._watched(send, messages, place)
            if accepted:
                self.delivered_count += accepted
                EVENT_DELIVERIES.labels(queue.name).inc(accepted)
            state: dict[str, Any] = {}
            if error is None and not abandoned:
                state.update(attempts=0, last_error=None, next_attempt_at=None)
            if stalled != slow:
                state.update(slow=stalled)
            if accepted or state:

                async def mark() -> None:
                    async with self.sessions() as session, session.begin():
                        if accepted:
                            done = [r.id for r in rows[:accepted]]
                            acked = sorted({r.event_pk for r in rows[:accepted]})
                            await self._mark_delivered(session, done, acked, queue)
                        if state:
                            await session.execute(
                                update(queue.state)
                                .where(queue.state.subscription_id == sid)
                                .values(**state)
                            )

                # What the far end took is marked even if the database goes away now:
                # unmarked, it would be sent again.
                await self._while_leased(mark, leased_at, sid, queue)
            if error is not None:
                await self._failed(sid, error, used, queue, progressed=accepted > 0)
        finally:
            self._give_slow_place(place)

    async def _watched(
        self, send: Send, messages: list[tuple[str, dict[str, Any]]], place: bool
    ) -> tuple[int, str | None, bool, bool, bool]:
        """Sends a batch and watches the far end take it. When it goes ``slow_seconds``
        without taking a message it is slow (``stalled``), and a lane that holds no slow
        lanes' place takes one; when all are taken it abandons the batch instead: what
        the far end took counts, the rest waits for a slow lane, without a failure or a
        backoff. So slow destinations hold at most half of the lanes for longer than
        ``slow_seconds``, whatever their number.

        Returns how many the far end took, why not the rest (as ``Send``), ``stalled``,
        whether the batch was abandoned, and whether the lane now holds a place."""
        loop = asyncio.get_running_loop()
        taken, last = 0, loop.time()

        def progress(count: int) -> None:
            nonlocal taken, last
            taken, last = count, loop.time()

        task: asyncio.Future[tuple[int, str | None]] = asyncio.ensure_future(
            send(messages, progress)
        )
        stalled = took = False
        try:
            while not task.done():
                quiet = loop.time() - last
                if quiet < self.slow_seconds:
                    await asyncio.wait({task}, timeout=self.slow_seconds - quiet)
                    continue
                stalled = True
                if place:
                    await asyncio.wait({task})
                elif self.slow_lanes.take():
                    place = took = True
                else:
                    task.cancel()
                    await asyncio.wait({task})
                    return taken, None, True, True, place
            accepted, error = task.result()
        except BaseException:
            if took:
                self.slow_lanes.give()
            raise
        finally:
            task.cancel()  # when this lane was cancelled: the send ends with it
        return accepted, error, stalled, False, place

    async def _while_leased(
        self, write: Callable[[], Awaitable[None]], leased_at: float, sid: int, queue: Queue
    ) -> None:
        """Runs ``write`` (one transaction), tried again while the database is away, until
        three quarters of the subscription's lease have passed: while the lease holds no
        other dispatcher takes the subscription, so a batch the far end took and whose
        mark is written late is not sent twice. Past that, or for any other error, the
        error is raised (the batch will be sent again: at least once)."""
        give_up = leased_at + self.lease.total_seconds() * 0.75
        delay = 0.1
        while True:
            try:
                async with asyncio.timeout(max(give_up - time.monotonic(), 0.01)):
                    await write()
                return
            except Exception as exc:
                if _being_cancelled() or not _database_away(exc):
                    raise
                if time.monotonic() + delay >= give_up:
                    raise
                log.info(
                    "%s subscription %s: delivered, not marked yet (%s); trying again",
                    queue.name,
                    sid,
                    type(exc).__name__,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _give_slow_place(self, place: bool) -> None:
        if place:
            self.slow_lanes.give()

    def _amqp_sender(self, sub: AmqpSubscription) -> Send:
        """Publishes with confirms; a broker that confirms only the first messages has
        failed for the rest. The batch is one step: progress is its end."""
        url = self.secret_box.decrypt(sub.connection_string_encrypted)
        exchange, routing_key = sub.exchange, sub.routing_key

        async def send(
            messages: list[tuple[str, dict[str, Any]]], progress: Progress
        ) -> tuple[int, str | None]:
            try:
                confirmed = await asyncio.wait_for(
                    self.brokers.publish(url, exchange, routing_key, messages),
                    self.publish_timeout,
                )
            except PublishError as exc:
                return 0, str(exc)
            except TimeoutError:
                await self.brokers.drop(url)
                return 0, f"no confirmation within {self.publish_timeout:.0f}s"
            except asyncio.CancelledError:  # abandoned (a slow broker): confirms are owed
                await self.brokers.drop(url)
                raise
            if confirmed < len(messages):
                return confirmed, "the broker did not confirm every message"
            return confirmed, None

        return send

    def _webhook_sender(self, sub: WebhookSubscription) -> Send:
        """POSTs one message at a time, until one is refused or the time is up."""
        url, header_name = sub.url, sub.auth_header_name
        header_value = self.secret_box.decrypt(sub.auth_header_value_encrypted)

        async def send(
            messages: list[tuple[str, dict[str, Any]]], progress: Progress
        ) -> tuple[int, str | None]:
            try:
                return await self.webhooks.post(
                    url,
                    header_name,
                    header_value,
                    messages,
                    budget=self.publish_timeout,
                    progress=progress,
                ), None
            except WebhookError as exc:
                return exc.accepted, str(exc)

        return send

    async def _mark_delivered(
        self,
        session: AsyncSession,
        deliveries: list[int],
        events: list[int],
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

    async def _failed(
        self,
        sid: int,
        error: str,
        used: tuple[str, ...],
        queue: Queue = AMQP,
        *,
        progressed: bool = False,
    ) -> None:
        """Backs the subscription off. A batch that ``progressed`` (the far end took
        some of it) was a success as well: the backoff starts again from its first step,
        so a receiver that refuses one request in twenty is retried after a second each
        time, never after minutes."""
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
            state.attempts = 1 if progressed else state.attempts + 1
            delay = backoff_seconds(state.attempts)
            state.next_attempt_at = utcnow() + timedelta(seconds=delay)
            state.last_error = error
        self.wake()  # the waker sleeps until this retry is due
        self.failures.warning(
            (queue.name, sid),
            error,
            "%s subscription %s: delivery failed (attempt %s, next in %.0fs): %s",
            queue.name,
            sid,
            state.attempts,
            delay,
            error,
            extra={"subscription_id": sid, "attempts": state.attempts},
        )

    async def _release(
        self, sid: int, queue: Queue = AMQP, tried_at: datetime | None = None
    ) -> None:
        """Ends this dispatcher's lease of the subscription. ``tried_at``: a release that
        failed then, tried again; it ends only a lease that began before (a lease runs
        ``lease_seconds``), never one a lane of this dispatcher took since."""
        mine = and_(queue.state.subscription_id == sid, queue.state.lease_owner == self.worker_id)
        if tried_at is not None:
            mine = and_(mine, queue.state.lease_until <= tried_at + self.lease)
        async with self.sessions() as session, session.begin():
            await session.execute(
                update(queue.state).where(mine).values(lease_owner=None, lease_until=None)
            )

    async def _release_quietly(self, sid: int, queue: Queue) -> None:
        """Releases the lease while a lane ends its pass, however it ends: within
        RELEASE_SECONDS, and never raising but a cancellation, which must go on (the stop,
        a lost lock). A release that fails is tried again later (``_release_pending``)."""
        tried_at = utcnow()
        try:
            async with asyncio.timeout(RELEASE_SECONDS):
                await self._release(sid, queue)
        except Exception as exc:  # the database is away, or does not answer in time
            self._unreleased[(queue.name, sid)] = (queue, tried_at)
            log.info(
                "%s subscription %s: lease not released (%s); trying again later",
                queue.name,
                sid,
                type(exc).__name__,
            )

    async def _release_pending(self) -> None:
        """Tries again the releases that failed. Those older than a lease are dropped:
        the lease has ended by itself."""
        now = utcnow()
        for key, (queue, tried_at) in list(self._unreleased.items()):
            if tried_at + self.lease < now:
                self._unreleased.pop(key, None)
                continue
            async with asyncio.timeout(RELEASE_SECONDS):
                await self._release(key[1], queue, tried_at)
            self._unreleased.pop(key, None)

    async def _settle_leases(self, stop: asyncio.Event) -> None:
        """After the lock was lost, its lanes ended: gives back every lease this
        dispatcher holds, once the database answers again, so that whoever dispatches
        next (this process or one standing by) finds the subscriptions free instead of
        waiting for the leases to run out. Every one, not only those a lane failed to
        release: a claim whose commit was cut may have taken a lease no lane knows of.
        Tried until it succeeds, the stop, or a lease has passed (they have all ended)."""
        # A lane still running (one that did not end when cancelled) may hold its lease
        # rightly: then only the releases that failed.
        mine = self._release_pending if self._stragglers else self._release_all_mine
        give_up = time.monotonic() + self.lease.total_seconds()
        while not stop.is_set() and time.monotonic() < give_up:
            try:
                await mine()
                return
            except Exception as exc:
                if _being_cancelled():
                    raise
                log.debug("dispatcher: leases not given back yet (%s)", type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    async def _release_all_mine(self) -> None:
        """Ends every lease this dispatcher holds: subscriptions' and mails'. Only while
        none of its lanes runs."""
        async with asyncio.timeout(RELEASE_SECONDS):
            async with self.sessions() as session, session.begin():
                for queue in (AMQP, WEBHOOK):
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
        self._unreleased.clear()

    # ---- the watchdog ------------------------------------------------------------

    def _progressed(self) -> None:
        self._progress_at = time.monotonic()
        DISPATCHER_LAST_PROGRESS.set(time.time())

    def _dispatching(self, on: bool) -> None:
        self.dispatching = on
        self._progressed()
        DISPATCHER_ACTIVE.set(1 if on else 0)
        if not on:
            self.stalled = False
            DISPATCHER_STALLED.set(0)

    async def _watchdog(self, stop: asyncio.Event) -> None:
        """Warns when the dispatcher, holding its lock, has finished no pass for
        ``stall_seconds`` while events are due: its lanes are stuck (or it is far too
        busy). A task of its own, beside the lanes, so that it sees them stuck. One line
        per ``stall_seconds`` while it lasts; ``cloudadmin_dispatcher_stalled`` shows it."""
        check = min(max(self.stall_seconds / 4, 0.05), 15.0)
        warned_at: float | None = None
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), check)
            idle_for = time.monotonic() - self._progress_at
            stalled = False
            if self.dispatching and idle_for > self.stall_seconds:
                try:
                    async with asyncio.timeout(RELEASE_SECONDS):
                        due = await self.next_due()
                except Exception:  # cannot tell: the lanes' own failures are logged
                    if _being_cancelled():
                        raise
                    due = None
                stalled = self.dispatching and due is not None and due <= utcnow()
            self.stalled = stalled
            DISPATCHER_STALLED.set(1 if stalled else 0)
            if not stalled:
                warned_at = None
            elif warned_at is None or time.monotonic() - warned_at >= self.stall_seconds:
                warned_at = time.monotonic()
                log.warning(
                    "dispatcher %s has finished no delivery pass for %.0f s while events "
                    "are due (lanes stuck?)",
                    self.worker_id,
                    idle_for,
                )

    async def purge_delivered(
        self, older_than: timedelta = RETENTION, log_older_than: timedelta = LOG_RETENTION
    ) -> None:
        """Delivered rows and sent mails are kept for a week, then dropped; fully
        delivered events, which are the user-action log, for a year."""
        cutoff: datetime = utcnow() - older_than
        log_cutoff: datetime = utcnow() - log_older_than
        async with self.sessions() as session, session.begin():
            await session.execute(
                delete(EventDelivery).where(
                    EventDelivery.delivered.is_(True), EventDelivery.delivered_at < cutoff
                )
            )
            await session.execute(
                delete(WebhookDelivery).where(
                    WebhookDelivery.delivered.is_(True), WebhookDelivery.delivered_at < cutoff
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

    # ---- mail ------------------------------------------------------------------

    async def send_mail_once(self) -> bool:
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
                .limit(10)
            )
            if self._skip_locked:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await session.execute(stmt)).scalars())
            if not ids:
                return False
            await session.execute(
                update(MailMessage)
                .where(MailMessage.id.in_(ids))
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
        self.wake()
        self.failures.warning(
            ("mail", row.reseller_id),
            error,
            "mail %s to reseller %s failed (attempt %s): %s",
            mail_id,
            row.reseller_id,
            row.attempts,
            error,
        )
