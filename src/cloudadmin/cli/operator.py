"""The operator's commands: `cloudadmin init` (the first account, user and API key) and
`cloudadmin rotate-secrets`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudadmin.cli.database import ready_settings
from cloudadmin.cli.output import fail, say


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
    settings = ready_settings()
    try:
        operator = asyncio.run(
            initialise(settings, email=email, password=password, company=company, key_name=key_name)
        )
    except AlreadyInitialised as exc:
        fail(f"{exc}: init makes the first one only; use `cloudadmin apikey create` for a key")
        raise typer.Exit(1) from None
    except LoadError as exc:
        for line in exc.lines():
            fail(line)
        raise typer.Exit(1) from None
    say(
        f"operator: user {operator.user_id} ({operator.email}) of account "
        f"{operator.account_id}; its API key follows, shown this once"
    )
    typer.echo(operator.key)


def _read_password(path: Path | None) -> str:
    """From the file's first line, or asked twice without echo on a terminal."""
    if path is None:
        if not sys.stdin.isatty():
            fail("no terminal to ask for the password on: give --password-file")
            raise typer.Exit(2)
        password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        try:
            text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        except OSError as exc:
            fail(f"cannot read {path}: {exc.strerror or exc}")
            raise typer.Exit(2) from None
        password = text.splitlines()[0] if text.strip() else ""
    if not password:
        fail("the password is empty")
        raise typer.Exit(2)
    return password


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

    settings = ready_settings()

    async def run() -> list[Any]:
        engine = create_engine(settings)
        try:
            return await rotate(engine, SecretBox(*settings.secret_keys()), batch_size=batch_size)
        finally:
            await engine.dispose()

    reports = asyncio.run(run())
    for report in reports:
        say(report.line(), err=False)
    if any(report.undecryptable for report in reports):
        fail("some stored secrets decrypt with no key given; they are left as they were")
        raise typer.Exit(1)
