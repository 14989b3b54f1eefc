"""`cloudadmin apikey create|list|revoke`: API keys from the command line."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cloudadmin.cli.database import ready_settings
from cloudadmin.cli.output import found_or_exit


def create(
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
    settings = ready_settings()
    token = found_or_exit(create_key(settings, user_id=user, name=name, expires_at=expires_at))
    typer.echo(token)


def list_(
    user: Annotated[int | None, typer.Option(help="Only the keys of this user.")] = None,
) -> None:
    """List API keys (never their secrets): id, user, name, created, expires, last use."""
    from cloudadmin.iam.api_tokens.command import format_table, list_keys

    for line in format_table(asyncio.run(list_keys(ready_settings(), user_id=user))):
        typer.echo(line)


def revoke(
    key_id: Annotated[int, typer.Argument(metavar="ID", help="Id of the key (before the _).")],
) -> None:
    """Revoke an API key: it stops authenticating at once."""
    from cloudadmin.iam.api_tokens.command import revoke as revoke_key

    changed = found_or_exit(revoke_key(ready_settings(), key_id))
    typer.echo(f"revoked key {key_id}" if changed else f"key {key_id} was already revoked")
