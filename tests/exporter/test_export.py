"""`cloudadmin export`: the whole database in the format `cloudadmin load` reads."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import AmqpSubscription, ApiKey, Branding, User
from cloudadmin.importer import LoadError, load_into, parse_document
from cloudadmin.importer.kinds import KINDS
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.startup import describe_url
from tests.cleaning import empty_all_tables
from tests.cli.terminal import run_in_terminal
from tests.exporter.helpers import export_text, full_landscape


class TestRoundTrip:
    async def test_export_load_export_gives_the_same_bytes(
        self,
        settings: Settings,
        database_url: str,
        client: httpx.AsyncClient,
        session: AsyncSession,
    ) -> None:
        await full_landscape(settings, client, session)
        first = await export_text(settings)
        await empty_all_tables(database_url)
        await load_into(settings, parse_document(first))
        second = await export_text(settings)
        assert second == first

    async def test_every_record_kind_is_written(
        self, settings: Settings, client: httpx.AsyncClient, session: AsyncSession
    ) -> None:
        await full_landscape(settings, client, session)
        document = json.loads(await export_text(settings))
        assert list(document) == [kind.key for kind in KINDS]
        assert all(document[kind.key] for kind in KINDS), {k: len(v) for k, v in document.items()}

    async def test_keys_and_secrets_still_work_after_the_round_trip(
        self,
        settings: Settings,
        database_url: str,
        client: httpx.AsyncClient,
        session: AsyncSession,
    ) -> None:
        keys = await full_landscape(settings, client, session)
        before = await _stored_secrets(session)
        text = await export_text(settings)
        await empty_all_tables(database_url)
        await load_into(settings, parse_document(text))
        session.expire_all()
        assert await _stored_secrets(session) == before
        for token in (keys["reseller"], keys["issued"]):
            r = await client.get(
                "/iam/clients/2001/tokens", headers={"Authorization": f"apikey {token}"}
            )
            assert r.status_code == 200, r.text
        box = SecretBox(settings.resolved_secret_key())
        sealed = (
            await session.execute(select(AmqpSubscription.connection_string_encrypted))
        ).scalar_one()
        assert "broker-pass" in box.decrypt(sealed)

    async def test_no_secret_is_written_in_clear(
        self, settings: Settings, client: httpx.AsyncClient, session: AsyncSession
    ) -> None:
        keys = await full_landscape(settings, client, session)
        text = await export_text(settings)
        for clear in (
            "demo-mail-password",
            "broker-pass",
            *(t.split("_", 1)[1] for t in keys.values()),
        ):
            assert clear not in text

    async def test_an_empty_database_gives_empty_lists(
        self, settings: Settings, app: object
    ) -> None:
        assert json.loads(await export_text(settings)) == {kind.key: [] for kind in KINDS}


async def _stored_secrets(session: AsyncSession) -> dict[str, object]:
    found = {
        "keys": sorted((await session.execute(select(ApiKey.id, ApiKey.secret_hash))).all()),
        "passwords": sorted((await session.execute(select(User.id, User.password_hash))).all()),
        "mail": (await session.execute(select(Branding.mail_password_encrypted))).all(),
        "amqp": (await session.execute(select(AmqpSubscription.connection_string_encrypted))).all(),
    }
    await session.rollback()  # on SQLite an open transaction holds the write lock
    return found


class TestStoredFormsOnLoad:
    async def test_an_encrypted_value_of_another_secret_key_is_rejected(
        self, settings: Settings, app: object
    ) -> None:
        sealed = SecretBox("another-key").encrypt("amqp://u:p@mq.example:5672/")
        doc = {
            "clients": [{"id": 5, "email": "a@b.example", "companyName": "A"}],
            "amqp_subscriptions": [{"id": 1, "client": 5, "connection_string_encrypted": sealed}],
        }
        with pytest.raises(LoadError) as caught:
            await load_into(settings, doc)
        assert [str(p) for p in caught.value.problems] == [
            "/amqp_subscriptions/0/connection_string_encrypted: cannot be decrypted with this "
            "CLOUDADMIN_SECRET_KEY"
        ]

    async def test_a_key_and_its_hash_together_are_rejected(
        self, settings: Settings, app: object
    ) -> None:
        doc = {"api_keys": [{"id": 1, "user": 1, "key": "1_x", "key_hash": "0" * 64}]}
        with pytest.raises(LoadError) as caught:
            await load_into(settings, doc)
        assert [str(p) for p in caught.value.problems] == [
            "/api_keys/0/key: give key or key_hash (exactly one)",
        ]


def export_command(env: dict[str, str], target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudadmin", "export", target],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
class TestCommand:
    @pytest.fixture
    def env(self, database_url: str, settings: Settings) -> dict[str, str]:
        return {
            **os.environ,
            "CLOUDADMIN_DATABASE_URL": database_url,
            "CLOUDADMIN_SECRET_KEY": "test-secret-key",
            "CLOUDADMIN_DATA_DIR": str(settings.data_dir),
        }

    async def test_a_file_is_written_with_a_summary(
        self,
        database_url: str,
        settings: Settings,
        env: dict[str, str],
        client: httpx.AsyncClient,
        session: AsyncSession,
        tmp_path: Path,
    ) -> None:
        await full_landscape(settings, client, session)
        target = tmp_path / "out.json"
        done = await asyncio.to_thread(export_command, env, str(target))
        # stderr names the database it read, and nothing else
        assert (done.returncode, done.stderr) == (0, f"database: {describe_url(database_url)}\n")
        assert done.stdout.startswith("exported 335 records (clients 4, users 8, api_keys 7,")
        assert target.read_text(encoding="utf-8") == await export_text(settings)
        assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no partial file left

    async def test_a_terminal_sees_the_progress(
        self,
        settings: Settings,
        env: dict[str, str],
        client: httpx.AsyncClient,
        session: AsyncSession,
        tmp_path: Path,
    ) -> None:
        await full_landscape(settings, client, session)
        code, screen = await asyncio.to_thread(
            lambda: run_in_terminal("export", str(tmp_path / "out.json"), env=env)
        )
        assert code == 0, screen
        assert "exporting" in screen and "335/335" in screen and "records/s" in screen, screen
        assert "exported 335 records" in screen

    async def test_a_dash_writes_only_the_document_to_stdout(
        self,
        database_url: str,
        settings: Settings,
        env: dict[str, str],
        client: httpx.AsyncClient,
        session: AsyncSession,
    ) -> None:
        await full_landscape(settings, client, session)
        done = await asyncio.to_thread(export_command, env, "-")
        assert (done.returncode, done.stderr) == (0, f"database: {describe_url(database_url)}\n")
        assert done.stdout == await export_text(settings)

    async def test_an_unwritable_file_exits_1(
        self, env: dict[str, str], app: object, tmp_path: Path
    ) -> None:
        target = tmp_path / "missing-dir" / "out.json"
        done = await asyncio.to_thread(export_command, env, str(target))
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.splitlines()[1].startswith(f"error: cannot write {target}:")
