"""The command's own lines on the terminal, and how a command ends on what it did not
find."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import typer

from cloudadmin.startup import StartupError

T = TypeVar("T")


def say(message: str, *, level: str = "info", err: bool = True) -> None:
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


def fail(message: str) -> None:
    say(message, level="error")


def found_or_exit(work: Coroutine[Any, Any, T]) -> T:
    """Runs ``work``; what it did not find (a LookupError) is one line on stderr and exit
    status 1."""
    try:
        return asyncio.run(work)
    except LookupError as exc:
        fail(str(exc))
        raise typer.Exit(1) from exc
