"""`cloudadmin apikey create|list|revoke`: keys from the command line, as the API makes them."""

from __future__ import annotations

import asyncio
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncSession
from typer.testing import CliRunner

from cloudadmin.cli import app
from cloudadmin.config import Settings, get_settings
from cloudadmin.db.models import ApiKey
from cloudadmin.importer import load_into
from cloudadmin.startup import describe_url
from tests.importer.documents import example


@pytest.fixture
async def env(settings: Settings, database_url: str, app: object, tmp_path: Path) -> dict[str, str]:
    """The example landscape (users 1, 10, 20; keys 1, 2, 3) in the emptied test database."""
    await load_into(settings, example())
    return {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "test-secret-key",
        "CLOUDADMIN_DATA_DIR": str(tmp_path),
    }


async def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`cloudadmin apikey ...` in this process, on a thread of its own (the command runs
    its own event loop): its exit status and output as a process would give them, without
    starting Python for each command (tests/cli/test_serve.py runs `apikey create` as a
    process of its own)."""

    def run() -> subprocess.CompletedProcess[str]:
        # The command reads its settings from `env`, not from another test's cache.
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app, ["apikey", *args], env=env, prog_name="cloudadmin")
        finally:
            get_settings.cache_clear()
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        # A command that reaches the database names it first (tests/cli/test_database.py);
        # the rest of stderr is what each test judges.
        stderr = result.stderr
        named = f"database: {describe_url(env['CLOUDADMIN_DATABASE_URL'])}\n"
        if stderr.startswith("database: "):
            assert stderr.startswith(named), stderr
            stderr = stderr[len(named) :]
        return subprocess.CompletedProcess(
            ["cloudadmin", "apikey", *args], result.exit_code, result.stdout, stderr
        )

    return await asyncio.to_thread(run)


async def authenticates(client: httpx.AsyncClient, token: str) -> bool:
    r = await client.get("/iam/clients/2001/tokens", headers={"Authorization": f"apikey {token}"})
    return r.status_code == 200


async def stored(
    session: AsyncSession, key_id: int
) -> Row[tuple[str | None, datetime | None, int]]:
    """name, expires_at, user_id of a key."""
    found = (
        await session.execute(
            select(ApiKey.name, ApiKey.expires_at, ApiKey.user_id).where(ApiKey.id == key_id)
        )
    ).one()
    await session.rollback()  # an open transaction on SQLite holds the write lock
    return found


class TestCreate:
    async def test_the_printed_key_authenticates_and_never_expires_by_default(
        self, env: dict[str, str], client: httpx.AsyncClient, session: AsyncSession
    ) -> None:
        done = await cli(env, "create", "--user", "20", "--name", "deploy")
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        token = done.stdout.strip()
        assert await authenticates(client, token)
        assert tuple(await stored(session, int(token.split("_")[0]))) == ("deploy", None, 20)

    async def test_a_duration_expires_that_long_from_now(
        self, env: dict[str, str], session: AsyncSession
    ) -> None:
        before = datetime.now(UTC)
        done = await cli(env, "create", "--user", "20", "--expires", "30d")
        assert done.returncode == 0, done.stderr
        key = await stored(session, int(done.stdout.split("_")[0]))
        assert key.expires_at is not None
        assert (
            before + timedelta(days=30) <= key.expires_at <= datetime.now(UTC) + timedelta(days=30)
        )

    async def test_a_date_expires_at_its_midnight_utc(
        self, env: dict[str, str], session: AsyncSession
    ) -> None:
        done = await cli(env, "create", "--user", "20", "--expires", "2031-02-03")
        assert done.returncode == 0, done.stderr
        key = await stored(session, int(done.stdout.split("_")[0]))
        assert key.expires_at == datetime(2031, 2, 3, tzinfo=UTC)

    async def test_an_instant_with_an_offset_is_stored_in_utc(
        self, env: dict[str, str], session: AsyncSession
    ) -> None:
        done = await cli(env, "create", "--user", "20", "--expires", "2031-02-03T12:00:00+02:00")
        assert done.returncode == 0, done.stderr
        key = await stored(session, int(done.stdout.split("_")[0]))
        assert key.expires_at == datetime(2031, 2, 3, 10, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("soon", "Enter a date"),
            ("2001-01-01", "Must be in the future."),
        ],
    )
    async def test_a_bad_expiry_is_a_usage_error_and_stores_nothing(
        self, env: dict[str, str], session: AsyncSession, value: str, message: str
    ) -> None:
        done = await cli(env, "create", "--user", "20", "--expires", value)
        assert done.returncode == 2
        assert "--expires" in done.stderr and message in done.stderr, done.stderr
        assert len((await session.execute(select(ApiKey.id))).all()) == 3
        await session.rollback()

    async def test_an_unknown_user_exits_1(self, env: dict[str, str]) -> None:
        done = await cli(env, "create", "--user", "4242")
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == "error: no user with id 4242\n"


class TestList:
    async def test_every_key_is_listed_without_its_secret_or_hash(
        self, env: dict[str, str], session: AsyncSession
    ) -> None:
        created = await cli(
            env, "create", "--user", "20", "--name", "ci", "--expires", "2031-02-03"
        )
        done = await cli(env, "list")
        assert (done.returncode, done.stderr) == (0, "")
        lines = done.stdout.splitlines()
        assert lines[0].split() == [
            "ID",
            "USER",
            "NAME",
            "CREATED",
            "EXPIRES",
            "LAST",
            "USE",
            "STATE",
        ]
        assert [line.split()[0] for line in lines[1:]] == ["1", "2", "3", "4"]
        assert lines[4].split()[1:4] == ["20", "owner@shop.example", "ci"]
        assert "2031-02-03T00:00:00Z" in lines[4] and lines[4].endswith("active")
        secret = created.stdout.strip().split("_", 1)[1]
        hashes = (await session.execute(select(ApiKey.secret_hash))).scalars().all()
        await session.rollback()
        for hidden in (secret, "client-secret", *hashes):
            assert hidden not in done.stdout

    async def test_the_user_option_lists_only_that_users_keys(self, env: dict[str, str]) -> None:
        done = await cli(env, "list", "--user", "10")
        assert done.returncode == 0, done.stderr
        assert [line.split()[0] for line in done.stdout.splitlines()[1:]] == ["2"]

    async def test_the_last_use_and_the_state_are_shown(
        self, env: dict[str, str], client: httpx.AsyncClient
    ) -> None:
        assert await authenticates(client, "3_client-secret")
        await cli(env, "revoke", "2")
        lines = (await cli(env, "list")).stdout.splitlines()
        assert lines[2].endswith("revoked") and lines[3].endswith("active")
        assert lines[3].split()[-2].endswith("Z")  # used just now
        assert lines[1].split()[-2] == "-"  # never used


class TestRevoke:
    async def test_a_revoked_key_stops_authenticating(
        self, env: dict[str, str], client: httpx.AsyncClient
    ) -> None:
        assert await authenticates(client, "3_client-secret")
        done = await cli(env, "revoke", "3")
        assert (done.returncode, done.stdout, done.stderr) == (0, "revoked key 3\n", "")
        assert not await authenticates(client, "3_client-secret")

    async def test_revoking_twice_says_so(self, env: dict[str, str]) -> None:
        await cli(env, "revoke", "3")
        done = await cli(env, "revoke", "3")
        assert (done.returncode, done.stdout) == (0, "key 3 was already revoked\n")

    async def test_an_unknown_key_exits_1(self, env: dict[str, str]) -> None:
        done = await cli(env, "revoke", "99")
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == "error: no API key with id 99\n"
