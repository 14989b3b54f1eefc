"""The `cloudadmin` command."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from cloudadmin.config import Settings, get_settings

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


def _prepare_demo(settings: Settings) -> Settings:
    """The demo's settings (its own database file, loopback allowed); refuses, before
    anything is written, a database holding data the demo did not make."""
    from cloudadmin.demo.command import prepare_demo

    return prepare_demo(settings)


def _load_demo(settings: Settings, host: str, port: int, *, reset: bool) -> None:
    """Seeds the demo once (anew with ``reset``), or keeps it; prints its keys."""
    from cloudadmin.demo.command import load_demo

    load_demo(settings, host, port, reset=reset)


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
