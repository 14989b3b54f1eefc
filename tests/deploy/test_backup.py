"""docs/operations.md, "Backup and restore", run as written: the backup commands against a
running `serve` while requests write, the restore commands into new places, then a
`serve` on the restored copy answers the same data, what `export` leaves out included
(the webhook subscription, the activity log, user actions, the uploaded logo), and the
restored secret key decrypts the stored secrets. PostgreSQL (`pg_dump`/`pg_restore`) and
the embedded SQLite (the online backup, through the `sqlite3` shell and through Python)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from sqlalchemy import select

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.db.models.webhooks import WebhookSubscription
from cloudadmin.kit.crypto import SecretBox
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.importer.documents import EXAMPLE
from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

OPERATIONS_MD = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
RESELLER = {"Authorization": "apikey 2_reseller-secret"}
CLIENT = {"Authorization": "apikey 3_client-secret"}
HOOK_SECRET = "Bearer backup-test-hook-secret"
# The suite's own settings every process keeps (cheap password hashing).
KEPT = ("CLOUDADMIN_TEST_", "CLOUDADMIN_PASSWORD_HASH_")
FENCED_SH = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def blocks(subsection: str) -> list[str]:
    """The ``sh`` blocks of a subsection of "Backup and restore", in order."""
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    section = text.split("\n## Backup and restore\n", 1)[1].split("\n## ", 1)[0]
    part = section.split(f"\n### {subsection}", 1)[1].split("\n### ", 1)[0]
    return FENCED_SH.findall(part)


def run(script: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"


def cloudadmin(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def base_env(tmp: Path, name: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_") or k.startswith(KEPT)
    }
    env.update(
        {
            "CLOUDADMIN_DATA_DIR": str(tmp / name / "data"),
            "CLOUDADMIN_RUN_DISPATCHER": "false",
            "BACKUP": str(tmp / "backup"),
        }
    )
    return env


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=out,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, proc, log.read_text)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (30, 120, 200)).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Seen:
    """What the source served before its backup (read through the API)."""

    sellers: list[dict[str, Any]]
    webhooks: dict[str, Any]
    user_actions: list[dict[str, Any]]
    log_ids: set[int]
    logo_path: str
    logo: bytes


def make_history(base: str) -> Seen:
    """Changes of every kind the export leaves out, made through the API."""
    with httpx.Client(base_url=base, timeout=30) as http:
        r = http.post(
            "/cloud/v1/user_actions/subscribe",
            json={
                "url": "https://hooks.shop.example/user-actions",
                "auth_header_name": "Authorization",
                "auth_header_value": HOOK_SECRET,
            },
            headers=CLIENT,
        )
        assert r.status_code == 204, r.text
        r = http.post(
            "/iam/admin/sellers",
            json={"email": "kept@sales.example", "full_name": "Kept Seller"},
            headers=RESELLER,
        )
        assert r.status_code == 200, r.text
        logo = png()
        r = http.post(
            "/iam/reselling/settings/upload",
            files={"logo": ("logo.png", logo, "image/png")},
            headers=RESELLER,
        )
        assert r.status_code == 200, r.text
        logo_path = httpx.URL(r.json()["publicSettings"]["logo"]).path
        seen = read(http, logo_path)
    assert seen.logo == logo
    assert seen.user_actions, "the subscription made no user action"
    assert seen.webhooks["count"] == 1
    return seen


def read(http: httpx.Client, logo_path: str) -> Seen:
    sellers = http.get("/iam/admin/sellers", params={"limit": 1000}, headers=RESELLER)
    webhooks = http.get("/cloud/v1/user_actions/subscriptions_list", headers=CLIENT)
    actions = http.get("/cloud/v1/user_actions", headers=CLIENT)
    log = http.get("/iam/activity_log/requests", params={"limit": 1000}, headers=RESELLER)
    logo = http.get(logo_path)
    for r in (sellers, webhooks, actions, log, logo):
        assert r.status_code == 200, r.text
    return Seen(
        sellers=sellers.json()["results"],
        webhooks=webhooks.json(),
        user_actions=actions.json()["results"],
        log_ids={row["id"] for row in log.json()["result"]},
        logo_path=logo_path,
        logo=logo.content,
    )


@contextmanager
def writing(base: str) -> Iterator[None]:
    """Requests that write (each its activity-log row) for as long as the block runs."""
    stop, going = threading.Event(), threading.Event()
    answered: list[int] = []

    def write() -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            while not stop.is_set():
                answered.append(http.get("/iam/users", headers=RESELLER).status_code)
                going.set()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        assert going.wait(60), "the writer got no answer"
        yield
    finally:
        stop.set()
        thread.join(timeout=60)
    assert answered and set(answered) == {200}, answered[:5]


def back_up_and_restore(
    source: dict[str, str], target: dict[str, str], backup: list[str], restore: list[str], tmp: Path
) -> Seen:
    """The documented backup while `serve` writes, then the restore; returns what the
    source served before its backup."""
    Path(source["BACKUP"]).mkdir(parents=True, exist_ok=True)
    cloudadmin(source, "migrate")
    doc = tmp / "landscape.json"
    doc.write_text(json.dumps(EXAMPLE))
    cloudadmin(source, "load", str(doc))
    with serving(source, tmp / "source.log") as base:
        seen = make_history(base)
        with writing(base):
            for script in backup:
                run(script, source)
    for script in restore:
        run(script, target)
    return seen


def check_restored(target: dict[str, str], seen: Seen, tmp: Path) -> None:
    with serving(target, tmp / "restored.log") as base, httpx.Client(base_url=base) as http:
        restored = read(http, seen.logo_path)
    assert restored.sellers == seen.sellers
    assert restored.webhooks == seen.webhooks
    assert restored.user_actions == seen.user_actions
    assert seen.log_ids <= restored.log_ids, "activity-log rows from before the backup are gone"
    assert restored.logo == seen.logo


def stored_hook_secret(env: dict[str, str]) -> str:
    """The webhook header value as the restored database holds it, decrypted with the
    restored deployment's secret key."""
    settings = Settings(
        database_url=env.get("CLOUDADMIN_DATABASE_URL"),
        secret_key=env.get("CLOUDADMIN_SECRET_KEY"),
        data_dir=Path(env["CLOUDADMIN_DATA_DIR"]),
    )

    async def read_it() -> str:
        engine = create_engine(settings)
        try:
            async with engine.connect() as conn:
                found = await conn.execute(select(WebhookSubscription.auth_header_value_encrypted))
                return str(found.scalar_one())
        finally:
            await engine.dispose()

    return SecretBox(settings.resolved_secret_key()).decrypt(asyncio.run(read_it()))


def needs(*tools: str) -> None:
    """The documented commands' programs (postgresql-client, sqlite3): missing, their test
    fails under CI=true and is skipped elsewhere, as for the servers."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    why = f"the backup commands need {', '.join(missing)}, which is not installed"
    if os.environ.get("CI") == "true":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def test_the_section_has_its_commands():
    assert len(blocks("PostgreSQL")) == 2
    assert len(blocks("SQLite")) == 3  # backup, its Python alternative, restore


def test_postgresql(tmp_path: Path):
    needs("pg_dump", "pg_restore", "tar")
    admin = postgres_base_url()
    if admin is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    source_url = asyncio.run(create_pg_database(admin))
    target_url = asyncio.run(create_pg_database(admin))
    try:
        secret = {"CLOUDADMIN_SECRET_KEY": "backup-test-secret-key"}
        source = {
            **base_env(tmp_path, "source"),
            **secret,
            "CLOUDADMIN_DATABASE_URL": source_url,
            "CLOUDADMIN_BLOB_DIR": str(tmp_path / "source" / "blobs"),
        }
        target = {
            **base_env(tmp_path, "target"),
            **secret,
            "CLOUDADMIN_DATABASE_URL": target_url,
            "CLOUDADMIN_BLOB_DIR": str(tmp_path / "target" / "blobs"),
        }
        backup, restore = blocks("PostgreSQL")
        seen = back_up_and_restore(source, target, [backup], [restore], tmp_path)
        check_restored(target, seen, tmp_path)
        assert stored_hook_secret(target) == HOOK_SECRET
    finally:
        asyncio.run(drop_pg_database(admin, source_url))
        asyncio.run(drop_pg_database(admin, target_url))


@pytest.mark.parametrize("tool", ["sqlite3 shell", "python"])
def test_sqlite(tmp_path: Path, tool: str):
    needs("tar", *(["sqlite3"] if tool == "sqlite3 shell" else ["python3"]))
    backup, python_backup, restore = blocks("SQLite")
    if tool == "python":
        # The documented alternative replaces the `sqlite3` line, the rest stays.
        lines = backup.splitlines()
        (at,) = [i for i, line in enumerate(lines) if line.startswith("sqlite3 ")]
        backup = "\n".join([*lines[:at], python_backup, *lines[at + 1 :]])
    # The embedded default: no database URL, the secret key generated into the data dir.
    source = base_env(tmp_path, "source")
    target = base_env(tmp_path, "target")
    seen = back_up_and_restore(source, target, [backup], [restore], tmp_path)
    with sqlite3.connect(Path(source["BACKUP"]) / "cloudadmin.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    check_restored(target, seen, tmp_path)
    assert stored_hook_secret(target) == HOOK_SECRET
