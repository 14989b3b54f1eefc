"""Delivering the events owed to AMQP and webhook subscriptions: a lane's pass leases
the subscription due first, sends its next batch in id order, marks what the far end
took and backs the subscription off for the rest. Both kinds are served alike; only
their sending differs (events/senders.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cloudadmin.db.models import AmqpSubscription, WebhookSubscription
from cloudadmin.db.unavailable import is_unavailable
from cloudadmin.events.amqp import BrokerPool
from cloudadmin.events.failure_log import FailureLog
from cloudadmin.events.lanes import SLOW_SECONDS, SlowLanes, watched
from cloudadmin.events.leases import Leases
from cloudadmin.events.outbox import Backoff, Outbox
from cloudadmin.events.queues import AMQP, WEBHOOK, AnyQueue, Queue, Subscription
from cloudadmin.events.senders import Send, amqp_sender, webhook_sender
from cloudadmin.events.user_actions import published_record
from cloudadmin.events.waker import being_cancelled
from cloudadmin.events.webhooks import WebhookSender
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.observability.metrics import EVENT_DELIVERIES, EVENT_DELIVERY_FAILURES

log = logging.getLogger("cloudadmin.dispatcher")


def _database_away(exc: BaseException) -> bool:
    """A write that failed because the database went away (or did not answer in time),
    not because of what it wrote: worth trying again once it is back."""
    return isinstance(exc, OSError | TimeoutError) or is_unavailable(exc)


@dataclass(eq=False)
class Delivery:
    """A dispatcher's deliveries to subscriptions, shared by its ``lanes``."""

    outbox: Outbox
    leases: Leases
    secret_box: SecretBox
    brokers: BrokerPool
    webhooks: WebhookSender
    wake: Callable[[], None]  # the waker: a failed subscription's retry is due later
    failures: FailureLog
    lanes: int
    batch_size: int
    # No progress for this long makes a destination slow (tests shorten it).
    slow_seconds: float = SLOW_SECONDS
    delivered_count: int = 0

    def __post_init__(self) -> None:
        self.lease = self.outbox.lease
        # A batch is abandoned (and retried) long before its lease could run out, so
        # no other worker ever takes over a subscription that is still publishing.
        self.publish_timeout = self.lease.total_seconds() / 2
        self.slow_lanes = SlowLanes(max(1, self.lanes // 2))

    async def deliver_once(self) -> bool:
        """Claims one AMQP and one webhook subscription and delivers one batch of the
        events of each. False when idle."""
        worked = await self._deliver_once(AMQP)
        return await self._deliver_once(WEBHOOK) or worked

    async def _deliver_once(self, queue: AnyQueue) -> bool:
        # The lease runs from before the claim's clock reading: it ends after this.
        leased_at = time.monotonic()
        # A lane takes a slow destination only with one of the slow lanes' places.
        place = self.slow_lanes.take()
        try:
            claimed = await self.outbox.claim_subscription(queue, slow=place)
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
            if queue is AMQP:
                await self._deliver_batch(AMQP, sid, self._amqp, slow, place, leased_at)
            else:
                await self._deliver_batch(WEBHOOK, sid, self._webhook, slow, place, leased_at)
        finally:
            await self.leases.release_quietly(sid, queue)
        return True

    def _amqp(self, sub: AmqpSubscription) -> Send:
        return amqp_sender(self.brokers, self.secret_box, sub, self.publish_timeout)

    def _webhook(self, sub: WebhookSubscription) -> Send:
        return webhook_sender(self.webhooks, self.secret_box, sub, self.publish_timeout)

    async def _deliver_batch(
        self,
        queue: Queue[Subscription],
        sid: int,
        sender: Callable[[Subscription], Send],
        slow: bool,
        place: bool,
        leased_at: float,
    ) -> None:
        """Sends the next batch of the subscription's events in id order, marks what the
        far end took as delivered and counts a failure for the rest. ``sender`` makes
        the sending of one subscription; ``slow``: its destination is known to be slow;
        ``place``: this lane holds one of the slow lanes' places, given back here;
        ``leased_at``: when (``time.monotonic``) the lease was taken."""
        try:
            batch = await self.outbox.next_batch(queue, sid, self.batch_size)
            if batch is None:
                return
            sub, rows = batch
            # Read (and decrypted) while the row is at hand; sent after the session.
            send = sender(sub)
            used = queue.settings_of(sub)
            if not rows:
                return
            messages = [(r.event_id, published_record(r.body)) for r in rows]
            sent = await watched(send, messages, place, self.slow_lanes, self.slow_seconds)
            place = sent.place
            if sent.accepted:
                self.delivered_count += sent.accepted
                EVENT_DELIVERIES.labels(queue.name).inc(sent.accepted)
            state: dict[str, object] = {}
            if sent.error is None and not sent.abandoned:
                state.update(attempts=0, last_error=None, next_attempt_at=None)
            if sent.stalled != slow:
                state.update(slow=sent.stalled)
            if sent.accepted or state:
                delivered = rows[: sent.accepted]
                # What the far end took is marked even if the database goes away now:
                # unmarked, it would be sent again.
                await self._while_leased(
                    lambda: self.outbox.mark(queue, sid, delivered, state), leased_at, sid, queue
                )
            if sent.error is not None:
                EVENT_DELIVERY_FAILURES.labels(queue.name).inc()
                progressed = sent.accepted > 0  # the backoff starts again from its first step
                backoff = await self.outbox.back_off(
                    queue, sid, sent.error, used, progressed=progressed
                )
                if backoff is not None:
                    self._backed_off(queue, sid, sent.error, backoff)
        finally:
            self._give_slow_place(place)

    async def _while_leased(
        self, write: Callable[[], Awaitable[None]], leased_at: float, sid: int, queue: AnyQueue
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
                if being_cancelled() or not _database_away(exc):
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

    def _backed_off(self, queue: AnyQueue, sid: int, error: str, backoff: Backoff) -> None:
        """Wakes the waker, which sleeps until this retry is due, and says so."""
        self.wake()
        self.failures.warning(
            (queue.name, sid),
            error,
            "%s subscription %s: delivery failed (attempt %s, next in %.0fs): %s",
            queue.name,
            sid,
            backoff.attempts,
            backoff.delay,
            error,
            extra={"subscription_id": sid, "attempts": backoff.attempts},
        )
