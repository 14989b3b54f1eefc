"""The `cloudadmin` command."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from cloudadmin.config import Settings, get_settings

if TYPE_CHECKING:
    from cloudadmin.demo.local_services import LocalServices

T = TypeVar("T")

app = typer.Typer(help="Account, Billing and Cloud Administration API.", no_args_is_help=True)
apikey_app = typer.Typer(help="Manage API keys.", no_args_is_help=True)
app.add_typer(apikey_app, name="apikey")
events_app = typer.Typer(help="The events outbox.", no_args_is_help=True)
app.add_typer(events_app, name="events")


def _settings() -> Settings:
    settings = get_settings()
    if settings.uses_embedded_default:
        settings.ensure_data_dir()
    return settings


def _migrate(settings: Settings) -> None:
    from cloudadmin.db.migrate import upgrade

    upgrade(settings.effective_database_url)


@app.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    settings = _settings()
    _migrate(settings)
    typer.echo(f"schema up to date: {_describe(settings)}")


@app.command()
def load(
    source: Annotated[str, typer.Argument(help="JSON document to load, or - for stdin.")],
) -> None:
    """Load a landscape document (docs/import.md) in one transaction."""
    from cloudadmin.importer.command import run_load

    settings = _settings()
    _migrate(settings)
    raise typer.Exit(run_load(settings, source))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    demo: Annotated[bool, typer.Option(help="Load the demo landscape and print keys.")] = False,
    reset: Annotated[
        bool, typer.Option(help="With --demo: wipe what the demo made and seed it anew.")
    ] = False,
) -> None:
    """Migrate the schema, then serve the API."""
    import uvicorn

    from cloudadmin.logs import log_config

    settings = _settings()
    if demo:
        settings = _prepare_demo(settings)
    elif reset:
        typer.echo("error: --reset goes with --demo", err=True)
        raise typer.Exit(2)
    typer.echo(f"database: {_describe(settings)}", err=True)
    settings.resolved_secret_key()  # fail fast (production) or create it once (embedded)
    _migrate(settings)
    if demo:
        _load_demo(settings, host, port, reset=reset)
    if settings.prices_file is not None:
        _load_prices(settings, settings.prices_file)
    uvicorn.run(
        "cloudadmin.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=log_config(settings),
        # The app decides which X-Forwarded-For to believe (web/proxies.py).
        proxy_headers=False,
    )


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
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"prices loaded from {path}: {regions} region(s)", err=True)


DEMO_OUTBOUND_ALLOW = "127.0.0.0/8,::1"


def _prepare_demo(settings: Settings) -> Settings:
    """The demo's settings (its own database file, loopback allowed), after refusing a
    database that holds somebody else's data, before anything is written to it."""
    _demo_environment(settings)
    settings = get_settings()
    if settings.uses_embedded_default:
        settings.ensure_data_dir()
    _run_demo_step(_check_demo_database(settings))
    return settings


def _demo_environment(settings: Settings) -> None:
    """The app is built from the settings anew (by uvicorn, in this process or in worker
    processes), so what the demo changes goes where they are read from.

    CLOUDADMIN_DEMO: the embedded default database is demo.db, not the user's own
    cloudadmin.db (an explicit CLOUDADMIN_DATABASE_URL is kept). The demo's brokers and
    mail servers are on this machine, which the service refuses by default: unless
    CLOUDADMIN_OUTBOUND_ALLOW is set, the demo allows loopback."""
    os.environ["CLOUDADMIN_DEMO"] = "true"
    if not settings.outbound_allow:
        os.environ["CLOUDADMIN_OUTBOUND_ALLOW"] = DEMO_OUTBOUND_ALLOW
        typer.echo(f"demo: connections to loopback allowed (CLOUDADMIN_OUTBOUND_ALLOW="
                   f"{DEMO_OUTBOUND_ALLOW})", err=True)
    get_settings.cache_clear()


def _run_demo_step(step: Coroutine[Any, Any, T]) -> T:
    """Runs a demo step; a refusal is one line on stderr and exit status 1."""
    from cloudadmin.demo.instance import DemoRefused

    try:
        return asyncio.run(step)
    except DemoRefused as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


async def _check_demo_database(settings: Settings) -> None:
    from cloudadmin.db.engine import create_engine
    from cloudadmin.demo.instance import check_database

    engine = create_engine(settings)
    try:
        await check_database(engine, _describe(settings))
    finally:
        await engine.dispose()


def _load_demo(settings: Settings, host: str, port: int, *, reset: bool) -> None:
    from cloudadmin.db.engine import create_engine
    from cloudadmin.demo.instance import DemoStart, start_demo
    from cloudadmin.demo.local_services import find_local_services
    from cloudadmin.kit.crypto import SecretBox

    async def run() -> DemoStart:
        engine = create_engine(settings)
        try:
            return await start_demo(engine, SecretBox(settings.resolved_secret_key()),
                                    _describe(settings), reset=reset,
                                    probe=lambda: find_local_services(settings))
        finally:
            await engine.dispose()

    started = _run_demo_step(run())
    if started.services is not None:
        _echo_local_services(settings, started.services)
        typer.echo("demo landscape loaded; one API key per kind of caller:")
    else:
        typer.echo(f"demo landscape kept as it is (seeded {started.made_at:%Y-%m-%d %H:%M} "
                   "UTC; --reset starts over); one API key per kind of caller:")
    keys = started.keys
    width = max(len(kind) for kind in keys)
    for kind, token in keys.items():
        note = "  (no longer valid: revoked or expired)" if kind in started.invalid else ""
        typer.echo(f"  {kind:<{width}}  {token}{note}")
    some = keys.get("reseller") or next(iter(keys.values()))
    typer.echo(
        f"try: curl -H 'Authorization: apikey {some}' "
        f"http://{host}:{port}/iam/activity_log/requests"
    )


def _echo_local_services(settings: Settings, services: LocalServices) -> None:
    from cloudadmin.demo.local_services import amqp_address, smtp_address

    amqp_host, amqp_port = amqp_address(settings.demo_amqp_url)
    if services.amqp_url:
        typer.echo(f"demo: client 2001's AMQP subscription publishes to the broker at "
                   f"{amqp_host}:{amqp_port} (exchange amq.topic, routing key cloudadmin)",
                   err=True)
    else:
        typer.echo(f"demo: no broker at {amqp_host}:{amqp_port}: no AMQP subscription "
                   "(CLOUDADMIN_DEMO_AMQP_URL)", err=True)
    smtp_host, smtp_port = smtp_address(settings.demo_smtp_server)
    if services.smtp:
        typer.echo(f"demo: the reseller's mail goes to the SMTP server at "
                   f"{smtp_host}:{smtp_port}", err=True)
    else:
        typer.echo(f"demo: no SMTP server at {smtp_host}:{smtp_port}: the reseller has no "
                   "mail server (CLOUDADMIN_DEMO_SMTP_SERVER)", err=True)


@app.command()
def worker(
    lanes: Annotated[int | None, typer.Option(min=1, max=64, help="Parallel deliveries.")] = None,
) -> None:
    """Deliver events and e-mails (as `serve` does unless CLOUDADMIN_RUN_DISPATCHER=false)."""
    from cloudadmin.events.worker import run_worker
    from cloudadmin.logs import configure

    settings = _settings()
    configure(settings)
    _migrate(settings)
    asyncio.run(run_worker(settings, lanes=lanes))


@events_app.command("status")
def events_status() -> None:
    """Pending, delivered and failing counts per subscription, and the mail outbox."""
    from cloudadmin.events.status import print_status

    settings = _settings()
    asyncio.run(print_status(settings, typer.echo))


@apikey_app.command("create")
def apikey_create(
    user: Annotated[int, typer.Option(help="Id of the user the key acts as.")],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
) -> None:
    """Create an API key; the key is printed once, only its hash is stored."""
    from cloudadmin.auth.keys import create_key

    settings = _settings()
    _migrate(settings)
    try:
        token = asyncio.run(create_key(settings, user_id=user, name=name))
    except LookupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(token)


def _describe(settings: Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.effective_database_url).render_as_string(hide_password=True)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
