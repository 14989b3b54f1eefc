"""The dispatcher: delivers the outbox to subscribers' brokers, webhooks and mail servers.

Runs inside `cloudadmin serve` and as `cloudadmin worker`. Work is claimed with short
leases (events/outbox.py), so any number of workers share it without publishing one
subscription's events concurrently; on SQLite one dispatcher per database is enforced
with a file lock, and on PostgreSQL one per `serve` (whatever its ``--workers``) with an
advisory lock (events/single.py). Each subscription is served by one lane at a time, in
id order, and several lanes run side by side, so a dead or slow broker or webhook holds
up only its own subscription. AMQP and webhook subscriptions are two queues
(events/queues.py) served by the same lanes; only their sending differs
(events/senders.py). Idle lanes wait for the doorbell (events/lanes.py), which the
waker rings when the outbox may have work (events/waker.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.db.models import MailMessage
from cloudadmin.events.amqp import BrokerPool
from cloudadmin.events.delivery import Delivery
from cloudadmin.events.failure_log import FailureLog
from cloudadmin.events.lanes import Doorbell
from cloudadmin.events.leases import Leases
from cloudadmin.events.mail import MailError, MailSender, PlatformMailServer
from cloudadmin.events.outbox import LOG_RETENTION, RETENTION, Outbox
from cloudadmin.events.single import DispatcherLock
from cloudadmin.events.waker import Waker, Watchdog, being_cancelled
from cloudadmin.events.wakeup import Listener, subscribe_local
from cloudadmin.events.webhooks import WebhookSender
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.observability.metrics import (
    MAIL_FAILURES,
    MAIL_SENT,
)

log = logging.getLogger("cloudadmin.dispatcher")

# How long the dispatcher waits for its cancelled lanes before it carries on without them.
LANE_END_SECONDS = 10.0


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
        idle_poll_seconds: float = 30.0,
        idle_backoff_max_seconds: float = 5.0,
        exclusive: bool = False,
        stall_seconds: float = 120.0,
        platform_mail: PlatformMailServer | None = None,
    ) -> None:
        self.lease = timedelta(seconds=lease_seconds)
        self.engine = engine
        self.lanes = lanes
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.outbox = Outbox(engine, self.worker_id, self.lease)
        self.leases = Leases(self.outbox)
        # Where subscribers' brokers and mail servers may be (default: public addresses).
        self.outbound = outbound or Outbound()
        self.brokers = BrokerPool(self.outbound)
        self.webhooks = WebhookSender(self.outbound)
        self.mail = MailSender(secret_box, self.outbound, platform_mail)
        self.failures = FailureLog(log)
        # Inside `serve` (several processes of one service): one dispatcher among them.
        self.lock = DispatcherLock(engine, exclusive=exclusive)
        self.bell = Doorbell()  # the delivery lanes'
        self.mail_bell = Doorbell()
        self.watchdog = Watchdog(self.worker_id, stall_seconds, self.next_due)
        self.waker = Waker(
            self.next_due,
            self._ring,
            self.watchdog,
            poll_seconds=poll_seconds,
            idle_poll_seconds=idle_poll_seconds,
            idle_backoff_max_seconds=idle_backoff_max_seconds,
        )
        self.delivery = Delivery(
            self.outbox,
            self.leases,
            secret_box,
            self.brokers,
            self.webhooks,
            self.wake,
            self.failures,
            lanes,
            batch_size,
        )
        self.listener: Listener | None = None  # while running on PostgreSQL
        # Tasks that did not end when cancelled (LANE_END_SECONDS): never waited for again.
        self._stragglers: set[asyncio.Task[None]] = set()
        # Set while the lanes end (the stop, a lost lock): each ends after its pass.
        self._draining = False

    async def deliver_once(self) -> bool:
        """One delivery pass (events/delivery.py); False when idle."""
        return await self.delivery.deliver_once()

    def wake(self) -> None:
        """Look at the outbox now (a lane scheduled a retry, for instance)."""
        self.waker.wake()

    async def next_due(self) -> datetime | None:
        return await self.outbox.next_due()

    async def purge_delivered(
        self, older_than: timedelta = RETENTION, log_older_than: timedelta = LOG_RETENTION
    ) -> None:
        await self.outbox.purge_delivered(older_than, log_older_than)

    # ---- running ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        watchdog = asyncio.create_task(self.watchdog.run(stop))
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
                    await self.leases.settle(stop, lanes_running=bool(self._stragglers))
        finally:
            watchdog.cancel()
            await self.lock.release()
            await self.brokers.close()
            await self.webhooks.close()

    async def _run_lanes(self, stop: asyncio.Event) -> None:
        listener = self.listener = (
            Listener(self.lock.url, self.waker.woken)
            if self.engine.dialect.name == "postgresql"
            else None
        )
        unsubscribe = subscribe_local(self.waker.woken)
        self._draining = False
        lanes = [
            asyncio.create_task(self._lane(self.deliver_once, self.bell)) for _ in range(self.lanes)
        ]
        lanes.append(asyncio.create_task(self._lane(self.send_mail_once, self.mail_bell)))
        others = [
            asyncio.create_task(self._housekeeping(stop)),
            asyncio.create_task(self.waker.run(stop, listener)),
        ]
        tasks = lanes + others
        self.watchdog.set_dispatching(True)
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
                "dispatcher %s stopping; delivered %d events",
                self.worker_id,
                self.delivery.delivered_count,
            )
        finally:
            for task in tasks:  # cancelled itself (the stop's grace ran out): so are they
                task.cancel()
            self.watchdog.set_dispatching(False)
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
                if self.leases.owed:
                    await self.leases.release_pending()
                worked = await work()
            except Exception as exc:
                if being_cancelled():  # the stop or a lost lock: the lane ends, cancelled,
                    raise asyncio.CancelledError from exc  # whatever its unwinding raised
                log.exception("dispatcher lane failed; retrying")
                worked = False
            else:
                self.watchdog.progressed()
            if worked:
                self.waker.found_work = True
                if woken:
                    bell.ring()  # there may be more: the next idle lane looks too
                woken = False
            else:
                await bell.wait(seen)
                woken = True

    def _ring(self) -> None:
        self.bell.ring()
        self.mail_bell.ring()

    async def _housekeeping(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.purge_delivered()
            except Exception:
                if being_cancelled():
                    raise
                log.exception("housekeeping failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 600)

    # ---- mail ------------------------------------------------------------------

    async def send_mail_once(self) -> bool:
        ids = await self.outbox.claim_mails()
        for mail_id in ids:
            await self._send_one(mail_id)
        return bool(ids)

    async def _send_one(self, mail_id: int) -> None:
        async with self.outbox.sessions() as session:
            message = await session.get(MailMessage, mail_id)
            if message is None:
                return
            try:
                await self.mail.send(session, message)
                error = None
            except MailError as exc:  # try again later
                error = str(exc)
        row = await self.outbox.mail_tried(mail_id, error)
        if row is None:
            return
        if error is None:
            MAIL_SENT.inc()
            return
        MAIL_FAILURES.inc()
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
