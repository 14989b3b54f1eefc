"""`cloudadmin worker`: the dispatcher as a process of its own, stopped by SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound

log = logging.getLogger("cloudadmin.worker")


async def run_worker(settings: Settings, *, lanes: int | None = None) -> None:
    engine = create_engine(settings)
    dispatcher = Dispatcher(
        engine,
        SecretBox(settings.resolved_secret_key()),
        lanes=lanes or settings.dispatcher_lanes,
        poll_seconds=settings.dispatcher_poll_seconds,
        lease_seconds=settings.dispatcher_lease_seconds,
        batch_size=settings.dispatcher_batch_size,
        outbound=Outbound.from_settings(settings),
        idle_poll_seconds=settings.dispatcher_idle_poll_seconds,
        idle_backoff_max_seconds=settings.dispatcher_idle_backoff_max_seconds,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if settings.worker_metrics_port is not None:
        from prometheus_client import start_http_server

        # A thread of prometheus_client's: scrapes never wait behind deliveries.
        start_http_server(settings.worker_metrics_port, addr=settings.worker_metrics_host)
        log.info(
            "worker metrics on http://%s:%d/metrics",
            settings.worker_metrics_host,
            settings.worker_metrics_port,
        )
    log.info("worker %s started", dispatcher.worker_id)
    try:
        await _stopped_within(
            asyncio.create_task(dispatcher.run(stop)), stop, settings.shutdown_grace_seconds
        )
    finally:
        await engine.dispose()
        log.info("worker %s stopped", dispatcher.worker_id)


async def _stopped_within(running: asyncio.Task[None], stop: asyncio.Event, grace: float) -> None:
    """Waits for the dispatcher; once stopped (SIGTERM), it has ``grace`` seconds
    (CLOUDADMIN_SHUTDOWN_GRACE_SECONDS) to end what it is delivering and close its
    connections, and is then cancelled: a worker always ends within the grace."""
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([running, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not running.done() and not (await asyncio.wait([running], timeout=grace))[0]:
        log.warning("worker: still delivering %g s after the stop; cancelled", grace)
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    if not running.cancelled():
        running.result()  # a failure of the dispatcher itself
