"""The `cloudadmin` command: its commands, in the order its help lists them. Each lives
in the module of its kind (serving.py, operator.py, api_keys.py); where a command starts
(its settings and database) is database.py, its own lines output.py."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from cloudadmin.cli import api_keys, operator, serving
from cloudadmin.cli.database import describe, migrated_settings, ready_settings
from cloudadmin.cli.output import fail, say
from cloudadmin.startup import StartupError


class _Commands(TyperGroup):
    """A problem found at start (startup.py: a bad database URL, a database that cannot
    be reached or is not there, a missing secret key) is one line on stderr and exit
    status 1; anything else is a bug and keeps its (plain) traceback."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        try:
            return super().invoke(ctx)
        except StartupError as exc:
            fail(str(exc))
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


@app.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    settings = migrated_settings(wait=True)
    say(f"schema up to date: {describe(settings)}", err=False)


@app.command()
def load(
    source: Annotated[str, typer.Argument(help="JSON document to load, or - for stdin.")],
) -> None:
    """Load a landscape document (docs/import.md) in one transaction."""
    from cloudadmin.importer.command import run_load

    raise typer.Exit(run_load(migrated_settings(), source))


@app.command()
def export(
    target: Annotated[str, typer.Argument(help="File to write, or - for stdout.")] = "-",
) -> None:
    """Write the landscape as a document `load` reads, to move it to another deployment
    (docs/import.md); not a backup (docs/operations.md, "Backup and restore")."""
    from cloudadmin.exporter.command import run_export

    raise typer.Exit(run_export(ready_settings(), target))


app.command("serve")(serving.serve)
app.command("worker")(serving.worker)


@events_app.command("status")
def events_status() -> None:
    """Pending, delivered and failing counts per subscription, and the mail outbox."""
    from cloudadmin.events.status import print_status

    settings = ready_settings()
    asyncio.run(print_status(settings, typer.echo))


apikey_app.command("create")(api_keys.create)
apikey_app.command("list")(api_keys.list_)
apikey_app.command("revoke")(api_keys.revoke)
app.command("init")(operator.init)
app.command("rotate-secrets")(operator.rotate_secrets)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
