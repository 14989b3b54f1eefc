"""`cloudadmin worker`: the dispatcher as a process of its own, stopped by SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.mail import PlatformMailServer
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.observability.metrics_access import start_metrics_server

log = logging.getLogger("cloudadmin.worker")

# After the grace, a cancelled dispatcher gets this long to unwind (each of its cleanups
# is bounded); past it the process ends without it.
UNWIND_SECONDS = 3.0
# Closing the database pool at the end, at most (a dead server may never answer).
DISPOSE_SECONDS = 2.0


# A job loop run beside the dispatcher, on its engine, until the stop (the monthly
# reports' job: billing/reports/runner.py, which `cloudadmin worker` passes).
Beside = Callable[[AsyncEngine, asyncio.Event], Coroutine[Any, Any, None]]


async def run_worker(
    settings: Settings, *, lanes: int | None = None, beside: Sequence[Beside] = ()
) -> None:
    engine = create_engine(dispatcher_settings(settings))
    dispatcher = Dispatcher(
        engine,
        SecretBox(*settings.secret_keys()),
        lanes=lanes or settings.dispatcher_lanes,
        poll_seconds=settings.dispatcher_poll_seconds,
        lease_seconds=settings.dispatcher_lease_seconds,
        batch_size=settings.dispatcher_batch_size,
        platform_mail=PlatformMailServer.from_settings(settings),
        outbound=Outbound.from_settings(settings),
        idle_poll_seconds=settings.dispatcher_idle_poll_seconds,
        idle_backoff_max_seconds=settings.dispatcher_idle_backoff_max_seconds,
        stall_seconds=settings.dispatcher_stall_seconds,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    grace = settings.shutdown_grace_seconds

    def stopped() -> None:
        if not stop.is_set():
            stop.set()
            _exit_after(grace + UNWIND_SECONDS + DISPOSE_SECONDS + 5)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopped)
    if settings.worker_metrics_port is not None:
        # A thread of its own: scrapes never wait behind deliveries. The same bearer
        # token as the service's /metrics, when one is set.
        start_metrics_server(
            settings.worker_metrics_port,
            settings.worker_metrics_host,
            settings.metrics_bearer_token,
        )
        log.info(
            "worker metrics on http://%s:%d/metrics",
            settings.worker_metrics_host,
            settings.worker_metrics_port,
        )
    log.info("worker %s started", dispatcher.worker_id)
    jobs = [asyncio.create_task(job(engine, stop)) for job in beside]
    try:
        await _stopped_within(asyncio.create_task(dispatcher.run(stop)), stop, grace)
    finally:
        stop.set()
        for job in jobs:
            await ended_within(job, UNWIND_SECONDS)
        await dispose_within(engine, DISPOSE_SECONDS)
        log.info("worker %s stopped", dispatcher.worker_id)


def dispatcher_settings(settings: Settings) -> Settings:
    """The settings of a dispatcher's own pool: it pings a connection before using it.
    After the database restarted, a pooled connection is dead; unpinged, it fails the
    first statement on it, which may be the mark of a batch already sent (the batch is
    then sent again). A ping per checkout is cheap beside a batch."""
    return settings.model_copy(update={"db_pre_ping": True})


async def _stopped_within(running: asyncio.Task[None], stop: asyncio.Event, grace: float) -> None:
    """Waits for the dispatcher; once stopped (SIGTERM), it has ``grace`` seconds
    (CLOUDADMIN_SHUTDOWN_GRACE_SECONDS) to end what it is delivering and close its
    connections, and is then cancelled: a worker always ends within the grace."""
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([running, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    await ended_within(running, grace)
    if running.done() and not running.cancelled():
        running.result()  # a failure of the dispatcher itself


async def ended_within(running: asyncio.Task[None], grace: float) -> None:
    """After the stop (its ``stop`` event set): a dispatcher gets ``grace`` seconds to
    end, is then cancelled and gets UNWIND_SECONDS more, and is then left behind (an error
    logged): whatever it is doing, even waiting on a dead database connection, it does
    not hold up the end of the process by more. `worker` and `serve` both stop theirs so."""
    if running.done() or (await asyncio.wait([running], timeout=grace))[0]:
        return
    log.warning("dispatcher still delivering %g s after the stop; cancelled", grace)
    running.cancel()
    if not (await asyncio.wait([running], timeout=UNWIND_SECONDS))[0]:
        log.error(
            "dispatcher did not end %g s after being cancelled; stopping without it",
            UNWIND_SECONDS,
        )


async def dispose_within(engine: AsyncEngine, seconds: float) -> None:
    """Closes the pool's connections, giving up after ``seconds`` (a server that is gone
    may never answer the goodbye)."""
    try:
        await asyncio.wait_for(engine.dispose(), seconds)
    except Exception as exc:
        log.warning("database connections not closed in order: %s", type(exc).__name__)


def _exit_after(seconds: float) -> None:
    """The last resort of a stop: should the process still run ``seconds`` after SIGTERM
    (every step above is bounded; something unforeseen is not), it ends, status 1."""

    def exit_now() -> None:
        log.error("worker: still running %g s after the stop; exiting", seconds)
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(seconds, exit_now)
    timer.daemon = True
    timer.start()
