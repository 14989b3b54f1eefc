"""`cloudadmin load` shows its progress on a terminal, and only there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cloudadmin.startup import describe_url
from tests.cli.terminal import run_in_terminal
from tests.importer.documents import addendum, example

pytestmark = pytest.mark.slow


@pytest.fixture
def env(database_url: str, tmp_path: Path, app: object) -> dict[str, str]:
    """The test database, emptied (the `app` fixture empties it)."""
    return {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "progress-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
    }


def named(env: dict[str, str]) -> str:
    return f"database: {describe_url(env['CLOUDADMIN_DATABASE_URL'])}\n"


@pytest.fixture
def document(tmp_path: Path) -> Path:
    doc = example()
    doc["addendums"] = [addendum(i) for i in range(1, 12_001)]
    path = tmp_path / "landscape.json"
    path.write_text(json.dumps(doc))
    return path


class TestProgress:
    def test_a_terminal_sees_each_phase_with_counts_and_rate(
        self, env: dict[str, str], document: Path
    ) -> None:
        code, screen = run_in_terminal("load", str(document), env=env)
        assert code == 0, screen
        for phase in ("reading", "validating", "checking references", "writing"):
            assert phase in screen, f"no {phase!r} phase in:\n{screen}"
        assert "12010/12010" in screen, screen
        assert "records/s" in screen, screen
        assert "loaded 12010 records" in screen

    def test_without_a_terminal_the_output_is_only_the_summary(
        self, env: dict[str, str], document: Path
    ) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "load", str(document)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        # stderr: only the database it loaded into (tests/cli/test_database.py).
        assert (done.returncode, done.stderr) == (0, named(env))
        assert done.stdout == (
            "loaded 12010 records (clients 2, users 3, api_keys 3, projects 1, regions 1, "
            "addendums 12000)\n"
        )

    def test_problems_without_a_terminal_are_only_the_error_lines(
        self, env: dict[str, str], tmp_path: Path
    ) -> None:
        doc = example()
        doc["users"][2]["client"] = 4242
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc))
        done = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "load", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == named(env) + (
            "error: /users/2/client: no client with id 4242 in the document or the database\n"
        )
