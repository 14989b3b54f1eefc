"""Giving a dispatcher's leases back when the database may be away: a lane ending its
pass must neither wait long nor fail, and a lease it could not give back is given back
later rather than left to run out (the subscription would wait for a minute)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import datetime

from cloudadmin.db.types import utcnow
from cloudadmin.events.outbox import Outbox
from cloudadmin.events.queues import AnyQueue
from cloudadmin.events.waker import being_cancelled

log = logging.getLogger("cloudadmin.dispatcher")

# Cleanup that runs while a lane ends (releasing its lease) gets this long: it must not
# hold up a stop or a lost lock when the database is away.
RELEASE_SECONDS = 5.0


class Leases:
    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        # Leases a lane could not release (the database was away), with when it tried.
        self._unreleased: dict[tuple[str, int], tuple[AnyQueue, datetime]] = {}

    @property
    def owed(self) -> bool:
        """Whether some release failed and is to be tried again (``release_pending``)."""
        return bool(self._unreleased)

    async def release_quietly(self, sid: int, queue: AnyQueue) -> None:
        """Releases the lease while a lane ends its pass, however it ends: within
        RELEASE_SECONDS, and never raising but a cancellation, which must go on (the stop,
        a lost lock). A release that fails is tried again later (``release_pending``)."""
        tried_at = utcnow()
        try:
            async with asyncio.timeout(RELEASE_SECONDS):
                await self.outbox.release(queue, sid)
        except Exception as exc:  # the database is away, or does not answer in time
            self._unreleased[(queue.name, sid)] = (queue, tried_at)
            log.info(
                "%s subscription %s: lease not released (%s); trying again later",
                queue.name,
                sid,
                type(exc).__name__,
            )

    async def release_pending(self) -> None:
        """Tries again the releases that failed. Those older than a lease are dropped:
        the lease has ended by itself."""
        now = utcnow()
        for key, (queue, tried_at) in list(self._unreleased.items()):
            if tried_at + self.outbox.lease < now:
                self._unreleased.pop(key, None)
                continue
            async with asyncio.timeout(RELEASE_SECONDS):
                await self.outbox.release(queue, key[1], tried_at)
            self._unreleased.pop(key, None)

    async def settle(self, stop: asyncio.Event, *, lanes_running: bool) -> None:
        """After the lock was lost, its lanes ended: gives back every lease this
        dispatcher holds, once the database answers again, so that whoever dispatches
        next (this process or one standing by) finds the subscriptions free instead of
        waiting for the leases to run out. Every one, not only those a lane failed to
        release: a claim whose commit was cut may have taken a lease no lane knows of.
        Tried until it succeeds, the stop, or a lease has passed (they have all ended).
        ``lanes_running``: a lane that did not end when cancelled may hold its lease
        rightly; then only the releases that failed are tried again."""
        mine = self.release_pending if lanes_running else self._release_all
        give_up = time.monotonic() + self.outbox.lease.total_seconds()
        while not stop.is_set() and time.monotonic() < give_up:
            try:
                await mine()
                return
            except Exception as exc:
                if being_cancelled():
                    raise
                log.debug("dispatcher: leases not given back yet (%s)", type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    async def _release_all(self) -> None:
        """Ends every lease this dispatcher holds. Only while none of its lanes runs."""
        async with asyncio.timeout(RELEASE_SECONDS):
            await self.outbox.release_all()
        self._unreleased.clear()
