"""`cloudadmin serve` and `cloudadmin worker`: the long-running processes."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from cloudadmin.cli.database import checked_settings, describe, migrate, ready_settings
from cloudadmin.cli.output import fail, say
from cloudadmin.config import Settings


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    demo: Annotated[
        bool, typer.Option("--demo", help="Load the demo landscape and print keys.")
    ] = False,
    reset: Annotated[
        bool, typer.Option("--reset", help="With --demo: wipe what the demo made and seed it anew.")
    ] = False,
) -> None:
    """Migrate the schema, then serve the API."""
    import uvicorn

    from cloudadmin.logs import log_config
    from cloudadmin.observability.multiproc import share_metrics

    if reset and not demo:
        fail("--reset goes with --demo")
        raise typer.Exit(2)
    if demo:
        from cloudadmin.demo.command import demo_environment
        from cloudadmin.startup import load_settings

        # Before the settings are checked: the demo's database is its own demo.db.
        demo_environment(load_settings())
    # share_metrics first: before anything imports prometheus_client.
    settings = share_metrics(checked_settings(wait=True, create=True, announce=False))
    if demo:
        settings = _prepare_demo(settings)
    say(f"database: {describe(settings)}")
    migrate(settings)
    if demo:
        _load_demo(settings, host, port, reset=reset)
    if settings.prices_file is not None:
        _load_prices(settings, settings.prices_file)
    _sigterm_exits_0()
    uvicorn.run(
        "cloudadmin.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=log_config(settings),
        access_log=False,  # the app writes its own (observability/request_observer.py)
        # The app decides which X-Forwarded-For to believe (web/proxies.py).
        proxy_headers=False,
        # uvicorn's httptools protocol, with a bound on the request head's arrival.
        http="cloudadmin.web.head_timeout:HeadTimeoutProtocol",
        # After SIGTERM, requests in flight get this long before they are cancelled.
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,
    )


def _sigterm_exits_0() -> None:
    """uvicorn stops gracefully on SIGTERM, then raises the signal once more under the
    handler it found, which by default ends the process as killed (status 143). A stop
    that was asked for and done in order is a success: this handler makes it exit 0
    (also for a SIGTERM that comes before uvicorn has taken the signal over)."""

    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def _load_prices(settings: Settings, path: Path) -> None:
    from cloudadmin.cloud.pricing.catalogue import PriceFileError, load_prices_file
    from cloudadmin.db.engine import create_engine, create_sessionmaker

    async def load() -> int:
        engine = create_engine(settings)
        try:
            return await load_prices_file(create_sessionmaker(engine), path)
        finally:
            await engine.dispose()

    try:
        regions = asyncio.run(load())
    except PriceFileError as exc:
        fail(str(exc))
        raise typer.Exit(1) from exc
    say(f"prices loaded from {path}: {regions} region(s)")


def _prepare_demo(settings: Settings) -> Settings:
    """The demo's settings (its own database file, loopback allowed); refuses, before
    anything is written, a database holding data the demo did not make."""
    from cloudadmin.demo.command import prepare_demo

    return prepare_demo(settings)


def _load_demo(settings: Settings, host: str, port: int, *, reset: bool) -> None:
    """Seeds the demo once (anew with ``reset``), or keeps it; prints its keys."""
    from cloudadmin.demo.command import load_demo

    load_demo(settings, host, port, reset=reset)


def worker(
    lanes: Annotated[int | None, typer.Option(min=1, max=64, help="Parallel deliveries.")] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535,
            help="Serve this worker's Prometheus metrics on this port "
            "(CLOUDADMIN_WORKER_METRICS_PORT).",
        ),
    ] = None,
) -> None:
    """Deliver events and e-mails (as `serve` does unless CLOUDADMIN_RUN_DISPATCHER=false)."""
    from cloudadmin.billing.reports.runner import run_report_jobs
    from cloudadmin.events.worker import run_worker
    from cloudadmin.logs import configure

    settings = ready_settings(wait=True)
    if metrics_port is not None:
        settings = settings.model_copy(update={"worker_metrics_port": metrics_port})
    configure(settings)
    asyncio.run(run_worker(settings, lanes=lanes, beside=(run_report_jobs,)))
