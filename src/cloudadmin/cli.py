"""The `cloudadmin` command."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, TypeVar

import typer

from cloudadmin.config import Settings
from cloudadmin.startup import StartupError


class _Cli(typer.Typer):
    """A problem found at start (startup.py: a bad database URL, a database that cannot
    be reached, a missing secret key) is one line on stderr and exit status 1; anything
    else is a bug and keeps its (plain) traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except StartupError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise SystemExit(1) from None


app = _Cli(
    help="Account, Billing and Cloud Administration API.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
apikey_app = typer.Typer(help="Manage API keys.", no_args_is_help=True)
app.add_typer(apikey_app, name="apikey")
events_app = typer.Typer(help="The events outbox.", no_args_is_help=True)
app.add_typer(events_app, name="events")


def _print_version(value: bool) -> None:
    if value:
        from cloudadmin import __version__

        typer.echo(f"cloudadmin {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    pass


def _settings(*, wait: bool = False) -> Settings:
    """The settings, checked, and the database reached once (startup.py); with ``wait``
    (serve, worker, migrate) a database that is not up yet is waited for."""
    from cloudadmin.startup import load_settings, preflight

    settings = load_settings()
    preflight(
        settings,
        wait_seconds=settings.database_wait_seconds if wait else 0,
        report=lambda line: typer.echo(line, err=True),
    )
    return settings


def _migrate(settings: Settings) -> None:
    from cloudadmin.startup import migrate

    migrate(settings)


def _migrated_settings(*, wait: bool = False) -> Settings:
    """The settings, checked (``_settings``), of a database whose schema is now up to
    date: where a command that reads or writes the database starts."""
    settings = _settings(wait=wait)
    _migrate(settings)
    return settings


T = TypeVar("T")


def _found_or_exit(work: Coroutine[Any, Any, T]) -> T:
    """Runs ``work``; what it did not find (a LookupError) is one line on stderr and exit
    status 1."""
    try:
        return asyncio.run(work)
    except LookupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    settings = _migrated_settings(wait=True)
    typer.echo(f"schema up to date: {_describe(settings)}")


@app.command()
def load(
    source: Annotated[str, typer.Argument(help="JSON document to load, or - for stdin.")],
) -> None:
    """Load a landscape document (docs/import.md) in one transaction."""
    from cloudadmin.importer.command import run_load

    raise typer.Exit(run_load(_migrated_settings(), source))


@app.command()
def export(
    target: Annotated[str, typer.Argument(help="File to write, or - for stdout.")] = "-",
) -> None:
    """Write the whole database as a landscape document that `load` reads (docs/import.md)."""
    from cloudadmin.exporter.command import run_export

    raise typer.Exit(run_export(_migrated_settings(), target))


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
    from cloudadmin.observability.multiproc import share_metrics

    if reset and not demo:
        typer.echo("error: --reset goes with --demo", err=True)
        raise typer.Exit(2)
    if demo:
        from cloudadmin.demo.command import demo_environment
        from cloudadmin.startup import load_settings

        # Before the settings are checked: the demo's database is its own demo.db.
        demo_environment(load_settings())
    # share_metrics first: before anything imports prometheus_client.
    settings = share_metrics(_settings(wait=True))
    if demo:
        settings = _prepare_demo(settings)
    typer.echo(f"database: {_describe(settings)}", err=True)
    _migrate(settings)
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
    from cloudadmin.events.worker import run_worker
    from cloudadmin.logs import configure

    settings = _settings(wait=True)
    if metrics_port is not None:
        settings = settings.model_copy(update={"worker_metrics_port": metrics_port})
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
    expires: Annotated[
        str | None,
        typer.Option(
            help="When the key stops working: 2030-01-31, 2030-01-31T12:00:00Z, or a duration "
            "from now (30d, 12h, 2w). Default: never."
        ),
    ] = None,
) -> None:
    """Create an API key; the key is printed once, only its hash is stored."""
    from cloudadmin.db.types import utcnow
    from cloudadmin.iam.api_tokens.command import create_key
    from cloudadmin.kit.timeparse import parse_expiry

    try:
        expires_at = parse_expiry(expires, utcnow()) if expires is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--expires") from exc
    settings = _migrated_settings()
    token = _found_or_exit(create_key(settings, user_id=user, name=name, expires_at=expires_at))
    typer.echo(token)


@apikey_app.command("list")
def apikey_list(
    user: Annotated[int | None, typer.Option(help="Only the keys of this user.")] = None,
) -> None:
    """List API keys (never their secrets): id, user, name, created, expires, last use."""
    from cloudadmin.iam.api_tokens.command import format_table, list_keys

    for line in format_table(asyncio.run(list_keys(_migrated_settings(), user_id=user))):
        typer.echo(line)


@apikey_app.command("revoke")
def apikey_revoke(
    key_id: Annotated[int, typer.Argument(metavar="ID", help="Id of the key (before the _).")],
) -> None:
    """Revoke an API key: it stops authenticating at once."""
    from cloudadmin.iam.api_tokens.command import revoke

    changed = _found_or_exit(revoke(_migrated_settings(), key_id))
    typer.echo(f"revoked key {key_id}" if changed else f"key {key_id} was already revoked")


def _describe(settings: Settings) -> str:
    from cloudadmin.startup import describe_url

    return describe_url(settings.effective_database_url)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
