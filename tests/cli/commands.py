"""Running a `cloudadmin` command in this process (for the commands that end by
themselves): its exit status and output as a process would give them, without starting
Python for each command. Commands that serve run as processes (test_database.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from cloudadmin.cli import app
from cloudadmin.config import get_settings


def environment(tmp_path: Path, **settings: str) -> dict[str, str]:
    """This process's environment less any CLOUDADMIN_ setting, plus ``settings``
    (``database_url="..."`` is CLOUDADMIN_DATABASE_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_")}
    env["CLOUDADMIN_DATA_DIR"] = str(tmp_path / "data")
    env["CLOUDADMIN_SECRET_KEY"] = "cli-test-secret"
    env.update({f"CLOUDADMIN_{name.upper()}": value for name, value in settings.items()})
    return env


def run(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    # The command reads its settings from `env`, not from another test's cache.
    get_settings.cache_clear()
    try:
        # Settings of this process that `env` leaves out are unset for the command.
        unset: dict[str, str | None] = {k: None for k in os.environ if k not in env}
        result = CliRunner().invoke(
            app, list(args), env={**unset, **env}, input=stdin, prog_name="cloudadmin"
        )
    finally:
        get_settings.cache_clear()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        ["cloudadmin", *args], result.exit_code, result.stdout, result.stderr
    )


async def run_async(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``run`` on a thread of its own: the command runs its own event loop."""
    return await asyncio.to_thread(run, env, *args, stdin=stdin)


def json_lines(text: str) -> list[dict[str, object]]:
    """Every line of ``text`` parsed as a JSON object (an assertion error names the
    first that is not one)."""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}\nin:\n{text}") from None
        assert isinstance(record, dict), line
        records.append(record)
    return records
