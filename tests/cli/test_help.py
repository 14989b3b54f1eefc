"""Every command's --help: flags are shown without a value they do not take, and
`apikey create --expires` says its units."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from cloudadmin.cli import app
from tests.cli.commands import run


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Each command's path, its group's first (typer brings its own click: a group is
    what has commands)."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, (*path, name))


PATHS = list(command_paths(typer.main.get_command(app)))


def test_every_command_is_walked() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"", "migrate", "serve", "init", "rotate-secrets", "apikey create"} <= names


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "cloudadmin")
def test_flags_take_no_value(path: tuple[str, ...]) -> None:
    done = run({"COLUMNS": "100"}, *path, "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "<bool>" not in text and "BOOLEAN" not in text, text
    assert "--help  " in text or "--help\n" in text
    if path == ("serve",):
        assert "--demo " in text and "--reset " in text


def test_expires_says_its_units() -> None:
    text = " ".join(run({"COLUMNS": "200"}, "apikey", "create", "--help").stdout.split())
    for unit in ("s (seconds)", "m (minutes)", "h (hours)", "d (days)", "w (weeks)"):
        assert unit in text, text
    assert "midnight UTC" in text


def test_the_readme_table_names_every_command() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    groups = {path[:-1] for path in PATHS if len(path) > 1}
    for path in PATHS:
        if path and path not in groups:
            assert f"| `cloudadmin {' '.join(path)}" in readme or (
                f"/ `cloudadmin {' '.join(path)}" in readme
            ), f"README.md's command table lacks `cloudadmin {' '.join(path)}`"
    assert "CLOUDADMIN_DATABASE_URL" in readme and "CLOUDADMIN_DEMO=true" in readme
