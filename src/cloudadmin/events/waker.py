"""When a dispatcher looks at the outbox: the waker, which rings the lanes' doorbells
when the outbox may have work, and the watchdog, which warns when the lanes are stuck.

Idle lanes do not poll: they wait for the doorbell (events/lanes.py). The waker rings
it on a wake-up (events/wakeup.py: PostgreSQL's NOTIFY, a commit in this process, a
lane's failure), when the earliest backoff or lease comes due, and, as a fallback for
writes that could not wake it, after a while: ``idle_poll_seconds`` while LISTENing,
else a poll that backs off from ``poll_seconds`` to ``idle_backoff_max_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

from cloudadmin.db.types import utcnow
from cloudadmin.events.wakeup import Listener
from cloudadmin.observability.metrics import (
    DISPATCHER_ACTIVE,
    DISPATCHER_LAST_PROGRESS,
    DISPATCHER_STALLED,
)

log = logging.getLogger("cloudadmin.dispatcher")

# How long the watchdog waits for its look at the outbox.
LOOK_SECONDS = 5.0

NextDue = Callable[[], Awaitable[datetime | None]]


def being_cancelled() -> bool:
    """Whether the running task has been asked to stop. A cancellation may surface as
    another error (a rollback on a dead connection raising while the task unwinds): that
    error must not be taken for a failure to retry."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Watchdog:
    """Notes the dispatcher's progress: the last time a lane finished a pass or the
    waker saw nothing due. Past ``stall_seconds`` without progress while events are
    due, it warns (``run``)."""

    def __init__(self, worker_id: str, stall_seconds: float, next_due: NextDue) -> None:
        self.worker_id = worker_id
        self.stall_seconds = stall_seconds
        self.next_due = next_due
        self.dispatching = False
        self.stalled = False
        self.checks = 0  # times it looked whether the lanes are stuck (tests read it)
        self._progress_at = time.monotonic()

    def progressed(self) -> None:
        self._progress_at = time.monotonic()
        DISPATCHER_LAST_PROGRESS.set(time.time())

    def set_dispatching(self, on: bool) -> None:
        self.dispatching = on
        self.progressed()
        DISPATCHER_ACTIVE.set(1 if on else 0)
        if not on:
            self.stalled = False
            DISPATCHER_STALLED.set(0)

    async def run(self, stop: asyncio.Event) -> None:
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
                    async with asyncio.timeout(LOOK_SECONDS):
                        due = await self.next_due()
                except Exception:  # cannot tell: the lanes' own failures are logged
                    if being_cancelled():
                        raise
                    due = None
                stalled = self.dispatching and due is not None and due <= utcnow()
            self.stalled = stalled
            self.checks += 1
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


class Waker:
    """Rings (``ring``) when the outbox may have work: on a wake-up (``wake``), when a
    backoff or lease comes due, and at the fallback poll. Without notifications (SQLite,
    or the LISTEN connection down) that poll starts at ``poll_seconds`` and doubles
    while nothing turns up, up to ``idle_backoff_max_seconds``."""

    def __init__(
        self,
        next_due: NextDue,
        ring: Callable[[], None],
        watchdog: Watchdog,
        *,
        poll_seconds: float,
        idle_poll_seconds: float,
        idle_backoff_max_seconds: float,
    ) -> None:
        self.next_due = next_due
        self._ring = ring
        self.watchdog = watchdog
        self.poll_seconds = poll_seconds
        self.idle_poll_seconds = idle_poll_seconds
        self.idle_backoff_max_seconds = max(idle_backoff_max_seconds, poll_seconds)
        self.woken = asyncio.Event()  # set: look at the outbox now
        self.found_work = False  # set by a lane: the poll starts again from its first step
        self.looks = 0  # times it rang (tests and benchmarks read it)
        self.cycles = 0  # times it looked at the outbox (tests read it)

    def wake(self) -> None:
        """Look at the outbox now (a lane scheduled a retry, for instance)."""
        self.woken.set()

    def ring(self) -> None:
        self.looks += 1
        self._ring()

    async def run(self, stop: asyncio.Event, listener: Listener | None) -> None:
        backoff = self.poll_seconds
        woken = True  # look once at start
        while not stop.is_set():
            if listener is not None and await listener.ensure():
                woken = True  # notifications may have been missed while not listening
            self.woken.clear()
            if woken:
                self.ring()
            try:
                due = await self.next_due()
            except Exception:  # the database is away: let the lanes try (and log)
                if being_cancelled():
                    raise
                log.debug("dispatcher could not look at the outbox", exc_info=True)
                due = utcnow()
            self.cycles += 1
            now = utcnow()
            if due is None or due > now:
                self.watchdog.progressed()  # nothing due: idle, not stuck
            if not woken and due is not None and due <= now:
                self.ring()
            listening = listener is not None and listener.healthy
            timeout = self.idle_poll_seconds if listening else backoff
            if due is not None and due > now:
                timeout = min(timeout, (due - now).total_seconds() + 0.01)
            woken = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), timeout)
                woken = True
            if woken or self.found_work:
                backoff = self.poll_seconds
            else:
                backoff = min(backoff * 2, self.idle_backoff_max_seconds)
            self.found_work = False
