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
from typer.core import TyperGroup

from cloudadmin.config import Settings
from cloudadmin.startup import StartupError


class _Commands(TyperGroup):
    """A problem found at start (startup.py: a bad database URL, a database that cannot
    be reached or is not there, a missing secret key) is one line on stderr and exit
    status 1; anything else is a bug and keeps its (plain) traceback."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        try:
            return super().invoke(ctx)
        except StartupError as exc:
            _fail(str(exc))
            raise typer.Exit(1) from None


# Plain help (click's): typer's rich panels show every flag with a `<bool>` value it does
# not take.
app = typer.Typer(
    cls=_Commands,
    help="Account, Billing and Cloud Administration API. Every command works on the "
    "database of CLOUDADMIN_DATABASE_URL (default: cloudadmin.db in the data directory; "
    "CLOUDADMIN_DEMO=true: the demo's demo.db) and names it on its first line.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
apikey_app = typer.Typer(help="Manage API keys.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(apikey_app, name="apikey")
events_app = typer.Typer(help="The events outbox.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(events_app, name="events")


def _say(message: str, *, level: str = "info", err: bool = True) -> None:
    """A line of the command's own (what it works on, what it did), in the log format:
    with CLOUDADMIN_LOG_FORMAT=json every such line is a JSON record (logs.py)."""
    from cloudadmin.config import LogFormat
    from cloudadmin.logs import command_line
    from cloudadmin.startup import load_settings

    try:
        log_format = load_settings().log_format
    except StartupError:  # the settings themselves are what is wrong
        log_format = LogFormat.text
    if log_format is LogFormat.text and level == "error":
        message = f"error: {message}"
    typer.echo(command_line(log_format, message, level=level), err=err)


def _fail(message: str) -> None:
    _say(message, level="error")


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


def _settings(*, wait: bool = False, create: bool = False, announce: bool = True) -> Settings:
    """The settings, checked, and the database reached once (startup.py); with ``wait``
    (serve, worker, migrate) a database that is not up yet is waited for. Only with
    ``create`` (migrate, load, serve) may a SQLite file that is not there be made.
    With ``announce``, the database is then named on stderr, its password masked."""
    from cloudadmin.startup import load_settings, preflight

    settings = load_settings()
    preflight(
        settings,
        wait_seconds=settings.database_wait_seconds if wait else 0,
        report=lambda line: _say(line, level="warning"),
        create=create,
    )
    if announce:
        _say(f"database: {_describe(settings)}")
    return settings


def _migrate(settings: Settings) -> None:
    from cloudadmin.startup import migrate

    migrate(settings)


def _migrated_settings(*, wait: bool = False) -> Settings:
    """The settings, checked (``_settings``), of a database (made if need be) whose
    schema is now up to date: where migrate and load start."""
    settings = _settings(wait=wait, create=True)
    _migrate(settings)
    return settings


def _ready_settings(*, wait: bool = False) -> Settings:
    """The settings, checked, of a database that exists and has this version's schema:
    where every other command starts. It never makes a database, nor migrates one."""
    from cloudadmin.startup import require_schema

    settings = _settings(wait=wait)
    require_schema(settings)
    return settings


T = TypeVar("T")


def _found_or_exit(work: Coroutine[Any, Any, T]) -> T:
    """Runs ``work``; what it did not find (a LookupError) is one line on stderr and exit
    status 1."""
    try:
        return asyncio.run(work)
    except LookupError as exc:
        _fail(str(exc))
        raise typer.Exit(1) from exc


@app.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    settings = _migrated_settings(wait=True)
    _say(f"schema up to date: {_describe(settings)}", err=False)


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
    """Write the landscape as a document `load` reads, to move it to another deployment
    (docs/import.md); not a backup (docs/operations.md, "Backup and restore")."""
    from cloudadmin.exporter.command import run_export

    raise typer.Exit(run_export(_ready_settings(), target))


@app.command()
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
        _fail("--reset goes with --demo")
        raise typer.Exit(2)
    if demo:
        from cloudadmin.demo.command import demo_environment
        from cloudadmin.startup import load_settings

        # Before the settings are checked: the demo's database is its own demo.db.
        demo_environment(load_settings())
    # share_metrics first: before anything imports prometheus_client.
    settings = share_metrics(_settings(wait=True, create=True, announce=False))
    if demo:
        settings = _prepare_demo(settings)
    _say(f"database: {_describe(settings)}")
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
        _fail(str(exc))
        raise typer.Exit(1) from exc
    _say(f"prices loaded from {path}: {regions} region(s)")


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
    from cloudadmin.billing.reports.runner import run_report_jobs
    from cloudadmin.events.worker import run_worker
    from cloudadmin.logs import configure

    settings = _ready_settings(wait=True)
    if metrics_port is not None:
        settings = settings.model_copy(update={"worker_metrics_port": metrics_port})
    configure(settings)
    asyncio.run(run_worker(settings, lanes=lanes, beside=(run_report_jobs,)))


@events_app.command("status")
def events_status() -> None:
    """Pending, delivered and failing counts per subscription, and the mail outbox."""
    from cloudadmin.events.status import print_status

    settings = _ready_settings()
    asyncio.run(print_status(settings, typer.echo))


@apikey_app.command("create")
def apikey_create(
    user: Annotated[int, typer.Option(help="Id of the user the key acts as.")],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
    expires: Annotated[
        str | None,
        typer.Option(
            help="When the key stops working: a date (2030-01-31, midnight UTC), a time "
            "(2030-01-31T12:00:00Z), or a duration from now: a number and its unit, s "
            "(seconds), m (minutes), h (hours), d (days) or w (weeks), as in 30d, 12h, 2w. "
            "Default: never."
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
    settings = _ready_settings()
    token = _found_or_exit(create_key(settings, user_id=user, name=name, expires_at=expires_at))
    typer.echo(token)


@apikey_app.command("list")
def apikey_list(
    user: Annotated[int | None, typer.Option(help="Only the keys of this user.")] = None,
) -> None:
    """List API keys (never their secrets): id, user, name, created, expires, last use."""
    from cloudadmin.iam.api_tokens.command import format_table, list_keys

    for line in format_table(asyncio.run(list_keys(_ready_settings(), user_id=user))):
        typer.echo(line)


@apikey_app.command("revoke")
def apikey_revoke(
    key_id: Annotated[int, typer.Argument(metavar="ID", help="Id of the key (before the _).")],
) -> None:
    """Revoke an API key: it stops authenticating at once."""
    from cloudadmin.iam.api_tokens.command import revoke

    changed = _found_or_exit(revoke(_ready_settings(), key_id))
    typer.echo(f"revoked key {key_id}" if changed else f"key {key_id} was already revoked")


@app.command()
def init(
    email: Annotated[str, typer.Option(help="The operator's e-mail: its login and account's.")],
    company: Annotated[str, typer.Option(help="The name of the operator's account.")] = "Operator",
    password_file: Annotated[
        Path | None,
        typer.Option(
            help="Read the password from the first line of this file (- for stdin) instead "
            "of asking for it."
        ),
    ] = None,
    key_name: Annotated[str, typer.Option(help="A label for the first API key.")] = "operator",
) -> None:
    """Create the operator (docs/access.md) of a migrated database: its account, its user
    with a password, and an API key, printed once. Refused when there is an operator."""
    from cloudadmin.bootstrap import AlreadyInitialised, initialise
    from cloudadmin.importer.problems import LoadError

    password = _read_password(password_file)
    settings = _ready_settings()
    try:
        operator = asyncio.run(
            initialise(settings, email=email, password=password, company=company, key_name=key_name)
        )
    except AlreadyInitialised as exc:
        _fail(f"{exc}: init makes the first one only; use `cloudadmin apikey create` for a key")
        raise typer.Exit(1) from None
    except LoadError as exc:
        for line in exc.lines():
            _fail(line)
        raise typer.Exit(1) from None
    _say(
        f"operator: user {operator.user_id} ({operator.email}) of account "
        f"{operator.account_id}; its API key follows, shown this once"
    )
    typer.echo(operator.key)


def _read_password(path: Path | None) -> str:
    """From the file's first line, or asked twice without echo on a terminal."""
    if path is None:
        if not sys.stdin.isatty():
            _fail("no terminal to ask for the password on: give --password-file")
            raise typer.Exit(2)
        password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        try:
            text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot read {path}: {exc.strerror or exc}")
            raise typer.Exit(2) from None
        password = text.splitlines()[0] if text.strip() else ""
    if not password:
        _fail("the password is empty")
        raise typer.Exit(2)
    return password


@app.command("rotate-secrets")
def rotate_secrets(
    batch_size: Annotated[
        int, typer.Option(min=1, max=10_000, help="Rows re-encrypted per transaction.")
    ] = 200,
) -> None:
    """Re-encrypt every stored secret under CLOUDADMIN_SECRET_KEY (decrypting with it or a
    key of CLOUDADMIN_SECRET_KEYS_OLD); safe to run again after an interruption."""
    from cloudadmin.db.engine import create_engine
    from cloudadmin.db.secret_rotation import rotate_secrets as rotate
    from cloudadmin.kit.crypto import SecretBox

    settings = _ready_settings()

    async def run() -> list[Any]:
        engine = create_engine(settings)
        try:
            return await rotate(engine, SecretBox(*settings.secret_keys()), batch_size=batch_size)
        finally:
            await engine.dispose()

    reports = asyncio.run(run())
    for report in reports:
        _say(report.line(), err=False)
    if any(report.undecryptable for report in reports):
        _fail("some stored secrets decrypt with no key given; they are left as they were")
        raise typer.Exit(1)


def _describe(settings: Settings) -> str:
    from cloudadmin.startup import describe_url

    return describe_url(settings.effective_database_url)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
