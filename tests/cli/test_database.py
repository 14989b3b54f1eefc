"""Which database a command works on: each names it on its first line of stderr (its
password masked); only migrate, load and serve may make one, every other command
refuses a database that is not there or has no schema (one line, exit status 1,
nothing made); with CLOUDADMIN_LOG_FORMAT=json every line a command writes is JSON."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from cloudadmin.config import async_database_url
from tests.cli.commands import environment, json_lines, run, run_async
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.servers import free_port, wait_until_healthy

PASSWORD = "hunter2-not-shown"

# The commands that must not make a database, with the arguments they need.
NOT_CREATING: dict[str, list[str]] = {
    "export": ["export", "-"],
    "apikey create": ["apikey", "create", "--user", "1"],
    "apikey list": ["apikey", "list"],
    "apikey revoke": ["apikey", "revoke", "1"],
    "events status": ["events", "status"],
    "worker": ["worker"],
    "init": ["init", "--email", "root@operator.example", "--password-file", "-"],
    "rotate-secrets": ["rotate-secrets"],
}
# Those that end by themselves on a migrated, empty database, and their exit status.
ON_EMPTY: dict[str, tuple[list[str], int]] = {
    "migrate": (["migrate"], 0),
    "load": (["load", "-"], 0),
    "export": (["export", "-"], 0),
    "apikey list": (["apikey", "list"], 0),
    "apikey revoke": (["apikey", "revoke", "1"], 1),  # no such key
    "events status": (["events", "status"], 0),
    "rotate-secrets": (["rotate-secrets"], 0),
    "init": (["init", "--email", "root@operator.example", "--password-file", "-"], 0),
}


def with_password(url: str) -> str:
    """A PostgreSQL URL with a password (the test server trusts, so any will do)."""
    if not url.startswith("postgresql"):
        return url
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


def masked(url: str) -> str:
    return make_url(async_database_url(url)).render_as_string(hide_password=True)


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


@pytest.fixture
def pg_base() -> str:
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    return base


@pytest.fixture
def pg_fresh(pg_base: str) -> Iterator[str]:
    """A PostgreSQL database of its own without any schema."""
    url = asyncio.run(create_pg_database(pg_base))
    try:
        yield url
    finally:
        asyncio.run(drop_pg_database(pg_base, url))


class TestNamesItsDatabase:
    @pytest.mark.parametrize("command", ON_EMPTY)
    async def test_first_line_names_it_password_masked(
        self, command: str, database_url: str, app: object, tmp_path: Path
    ) -> None:
        url = with_password(database_url)
        args, status = ON_EMPTY[command]
        stdin = "{}" if command == "load" else "a-password\n"
        done = await run_async(environment(tmp_path, database_url=url), *args, stdin=stdin)
        assert done.returncode == status, done.stderr
        assert done.stderr.splitlines()[0] == f"database: {masked(url)}"
        assert PASSWORD not in done.stdout + done.stderr


class TestNeverCreated:
    @pytest.mark.parametrize("command", NOT_CREATING)
    def test_absent_sqlite_file(self, command: str, tmp_path: Path) -> None:
        path = tmp_path / "nowhere" / "cloudadmin.db"
        env = environment(tmp_path, database_url=f"sqlite:///{path}")
        done = run(env, *NOT_CREATING[command], stdin="a-password\n")
        one_line_error(done, f"sqlite+aiosqlite:///{path} does not exist", "cloudadmin migrate")
        assert not path.parent.exists()

    def test_embedded_default_makes_nothing(self, tmp_path: Path) -> None:
        """After `scripts/demo`, `export` exported 0 records from a cloudadmin.db it had
        just made (and the secret key it had generated for it)."""
        env = environment(tmp_path)
        del env["CLOUDADMIN_SECRET_KEY"]
        one_line_error(run(env, "export", "-"), "cloudadmin.db does not exist")
        assert not (tmp_path / "data").exists()

    def test_the_demo_database_is_named_in_the_error_and_by_a_setting(self, tmp_path: Path) -> None:
        env = environment(tmp_path)
        made = run({**env, "CLOUDADMIN_DEMO": "true"}, "migrate")
        assert made.returncode == 0, made.stderr
        demo = tmp_path / "data" / "demo.db"
        one_line_error(run(env, "export", "-"), f"the demo's database is {demo}")
        assert not (tmp_path / "data" / "cloudadmin.db").exists()
        done = run({**env, "CLOUDADMIN_DEMO": "true"}, "export", "-")
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[0] == f"database: sqlite+aiosqlite:///{demo}"

    def test_absent_postgresql_database(self, tmp_path: Path, pg_base: str) -> None:
        name = f"cloudadmin_missing_{uuid.uuid4().hex[:8]}"
        url = make_url(pg_base).set(database=name).render_as_string(hide_password=False)
        env = environment(tmp_path, database_url=url, database_wait_seconds="0")
        one_line_error(run(env, "export", "-"), f'database "{name}" does not exist')


class TestNeedsItsSchema:
    @pytest.mark.parametrize("command", NOT_CREATING)
    def test_sqlite_file_without_schema(self, command: str, tmp_path: Path) -> None:
        path = tmp_path / "empty.db"
        path.touch()  # an empty file is an empty SQLite database
        env = environment(tmp_path, database_url=f"sqlite:///{path}")
        done = run(env, *NOT_CREATING[command], stdin="a-password\n")
        # The database line, then the refusal.
        assert done.stderr.splitlines()[0] == f"database: sqlite+aiosqlite:///{path}"
        refusal = subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout, "".join(done.stderr.splitlines(True)[1:])
        )
        one_line_error(refusal, "has no schema", "run 'cloudadmin migrate' first")
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []

    def test_postgresql_without_schema(self, tmp_path: Path, pg_fresh: str) -> None:
        env = environment(tmp_path, database_url=pg_fresh)
        done = run(env, "apikey", "list")
        assert done.returncode == 1
        assert done.stderr.splitlines()[1:] == [
            f"error: the database {masked(pg_fresh)} has no schema: run 'cloudadmin migrate' first"
        ]
        migrated = run(env, "migrate")
        assert migrated.returncode == 0, migrated.stderr
        assert run(env, "apikey", "list").returncode == 0


@pytest.mark.slow
class TestJsonLogFormat:
    def test_serve_writes_only_json_lines(self, tmp_path: Path) -> None:
        path = tmp_path / "served.db"
        env = environment(
            tmp_path, database_url=f"sqlite:///{path}", log_format="json", run_dispatcher="false"
        )
        port = free_port()
        out, err = tmp_path / "stdout", tmp_path / "stderr"
        with out.open("w") as stdout, err.open("w") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cloudadmin", "serve", "--port", str(port)],
                env=env,
                stdout=stdout,
                stderr=stderr,
            )
            try:
                base = f"http://127.0.0.1:{port}"
                wait_until_healthy(base, proc, lambda: err.read_text())
                assert httpx.get(f"{base}/iam/clients/me").status_code == 401
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=60) == 0, err.read_text()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        records = json_lines(out.read_text() + err.read_text())
        assert records[0]["message"] == f"database: sqlite+aiosqlite:///{path}"
        assert any(r["logger"] == "uvicorn.error" for r in records)

    def test_commands_write_only_json_lines(self, tmp_path: Path) -> None:
        path = tmp_path / "cli.db"
        env = environment(tmp_path, database_url=f"sqlite:///{path}", log_format="json")

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "cloudadmin", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )

        absent = cli("events", "status")  # before migrate: no database yet
        assert absent.returncode == 1
        [refused] = json_lines(absent.stdout + absent.stderr)
        assert refused["level"] == "error"
        assert "does not exist" in str(refused["message"])
        for args in (["migrate"], ["rotate-secrets"]):
            done = cli(*args)
            assert done.returncode == 0, done.stderr
            json_lines(done.stdout)
            records = json_lines(done.stderr)
            assert records[0]["message"] == f"database: sqlite+aiosqlite:///{path}"
