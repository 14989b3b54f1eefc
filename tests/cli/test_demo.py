"""`cloudadmin serve --demo` as a real process: its own database, seeded once, never into
somebody else's data; keys that survive restarts; --reset; the local broker and mail server;
and the install stamp that lets scripts/demo skip pip."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import select, text

from cloudadmin.config import Settings
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine
from cloudadmin.demo.history import local_base
from cloudadmin.demo.local_services import amqp_address, listening, smtp_address
from tests.cli.commands import json_lines
from tests.importer.documents import EXAMPLE
from tests.servers import free_port, wait_until_healthy
from tests.waiting import until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"operator", "reseller", "client_admin", "client_member", "engineer", "other_client_admin"}
RABBIT_URL = os.environ.get("CLOUDADMIN_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def closed_address() -> str:
    """A loopback port nothing listens on (bound once, then released)."""
    return f"127.0.0.1:{free_port()}"


# The suite's own settings, kept: its databases, and the cheap password hashing of every
# process it starts (tests/conftest.py; the demo's users have passwords).
KEPT = ("CLOUDADMIN_TEST_", "CLOUDADMIN_PASSWORD_HASH_")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def demo_env(data_dir: Path) -> dict[str, str]:
    """The embedded default (no database URL, no secret key): what scripts/demo runs.
    The probes look where nothing listens unless a test says otherwise."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_") or k.startswith(KEPT)
    }
    env.update(
        {
            "CLOUDADMIN_DATA_DIR": str(data_dir),
            "CLOUDADMIN_RUN_DISPATCHER": "false",
            "CLOUDADMIN_DEMO_AMQP_URL": f"amqp://guest:guest@{closed_address()}/%2F",
            "CLOUDADMIN_DEMO_SMTP_SERVER": closed_address(),
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    return env


@pytest.fixture
def url_env(demo_env: dict[str, str], database_url: str, app: object) -> dict[str, str]:
    """An explicit database: the test database (SQLite or PostgreSQL), emptied by `app`."""
    return {
        **demo_env,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "demo-test-secret",
    }


@dataclass
class Started:
    base: str
    keys: dict[str, str]
    out: str
    err: str


def parse_keys(out: str) -> dict[str, str]:
    keys = {}
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("  ") and len(parts) >= 2 and parts[0] in KINDS:
            keys[parts[0]] = parts[1]
    return keys


@contextmanager
def demo(env: dict[str, str], logs: Path, *args: str) -> Iterator[Started]:
    """`serve --demo` on a free port until the block ends; its keys as printed."""
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    out, err = logs / f"{port}.out", logs / f"{port}.err"
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", "serve", "--demo", "--port", str(port), *args],
            env=env,
            stdout=out_file,
            stderr=err_file,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, proc, lambda: f"{out.read_text()}\n{err.read_text()}", timeout=120)
        started = Started(base, parse_keys(out.read_text()), out.read_text(), err.read_text())
        # The demo's own steps ran before the server answered. (What the dispatcher logs
        # later is the dispatcher's business.)
        assert "Traceback" not in started.err, started.err
        yield started
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def serve_demo_expecting_exit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cloudadmin", "serve", "--demo", "--port", str(free_port()), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def status(base: str, token: str, path: str = "/cloud/v1/users") -> int:
    return httpx.get(f"{base}{path}", headers={"Authorization": f"apikey {token}"}).status_code


def add_seller(base: str, reseller_key: str, email: str) -> None:
    r = httpx.post(
        f"{base}/iam/admin/sellers",
        json={"email": email, "full_name": "Kept"},
        headers={"Authorization": f"apikey {reseller_key}"},
    )
    assert r.status_code == 200, r.text


def seller_emails(base: str, reseller_key: str) -> set[str]:
    r = httpx.get(
        f"{base}/iam/admin/sellers",
        params={"limit": 1000},
        headers={"Authorization": f"apikey {reseller_key}"},
    )
    assert r.status_code == 200, r.text
    return {s["email"] for s in r.json()["results"]}


def snapshot(url: str) -> dict[str, list[Any]]:
    """Every row of every table, in a stable order."""

    async def read() -> dict[str, list[Any]]:
        engine = create_engine(Settings(database_url=url, secret_key="unused"))
        try:
            async with engine.connect() as conn:
                rows = {}
                for table in Base.metadata.sorted_tables:
                    found = await conn.execute(select(table))
                    rows[table.name] = sorted((tuple(r) for r in found), key=repr)
                version = await conn.execute(text("SELECT version_num FROM alembic_version"))
                rows["alembic_version"] = sorted(version.scalars())
                return rows
        finally:
            await engine.dispose()

    return asyncio.run(read())


def banner_curl(out: str, path: str) -> tuple[str, str]:
    """The key and URL of the banner's ``try: curl`` line for ``path``."""
    for line in out.splitlines():
        found = re.fullmatch(r"try: curl -H 'Authorization: apikey (\S+)' (\S+)", line)
        if found and path in found.group(2):
            return found.group(1), found.group(2)
    raise AssertionError(f"no curl of {path} in:\n{out}")


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


class TestRefusal:
    def test_a_database_with_other_data_is_left_untouched(
        self, url_env: dict[str, str], database_url: str
    ):
        cli(url_env, "load", "-", stdin=json.dumps(EXAMPLE))
        before = snapshot(database_url)
        assert before["clients"], "the example landscape was not loaded"
        done = serve_demo_expecting_exit(url_env)
        assert done.returncode == 1, done.stdout + done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "holds data the demo did not make" in errors[0], done.stderr
        assert "Traceback" not in done.stderr
        assert parse_keys(done.stdout) == {}
        assert snapshot(database_url) == before

    def test_reset_does_not_pass_the_refusal(self, url_env: dict[str, str], database_url: str):
        cli(url_env, "load", "-", stdin=json.dumps(EXAMPLE))
        before = snapshot(database_url)
        done = serve_demo_expecting_exit(url_env, "--reset")
        assert done.returncode == 1 and "did not make" in done.stderr, done.stderr
        assert snapshot(database_url) == before

    def test_reset_without_demo_is_an_error(self, demo_env: dict[str, str]):
        done = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "serve", "--reset"],
            env=demo_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and "--reset goes with --demo" in done.stderr


class TestFirstStart:
    def test_seeds_its_own_file_and_prints_working_keys(
        self, demo_env: dict[str, str], data_dir: Path, tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as started:
            assert set(started.keys) == KINDS
            for kind, token in started.keys.items():
                assert status(started.base, token) == 200, kind
            assert "jane.seller@acme.example" in seller_emails(
                started.base, started.keys["reseller"]
            )
            assert "demo landscape loaded" in started.out
        assert (data_dir / "demo.db").exists()
        assert not (data_dir / "cloudadmin.db").exists()

    def test_with_the_json_log_format_every_line_is_json(
        self, demo_env: dict[str, str], tmp_path: Path
    ):
        env = {**demo_env, "CLOUDADMIN_LOG_FORMAT": "json"}
        with demo(env, tmp_path / "logs") as started:
            records = json_lines(started.out) + json_lines(started.err)
            keys = parse_keys("\n".join(str(r["message"]) for r in records))
            assert set(keys) == KINDS
            assert status(started.base, keys["operator"]) == 200
        messages = [str(r["message"]) for r in records]
        assert (
            "demo: connections to loopback allowed (CLOUDADMIN_OUTBOUND_ALLOW=127.0.0.0/8,::1)"
            in messages
        )
        assert any(m.startswith("try: curl") for m in messages)

    def test_the_banner_shows_the_cloud_side_and_its_curl_works(
        self, demo_env: dict[str, str], tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as started:
            assert "client 2001's project 11, region 76" in started.out, started.out
            token, url = banner_curl(started.out, "/cloud/v1/lblisteners/")
            assert token == started.keys["client_admin"]
            assert url.startswith(f"{started.base}/cloud/v1/lblisteners/11/76/")
            r = httpx.get(url, headers={"Authorization": f"apikey {token}"})
            assert r.status_code == 200, r.text
            listener = r.json()
            assert listener["id"] == url.rsplit("/", 1)[1]
            assert f"its listener {listener['name']}," in started.out

    async def test_the_activity_log_the_readme_shows_first_is_not_empty(
        self, demo_env: dict[str, str], tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as started:
            token, url = banner_curl(started.out, "/iam/activity_log/requests")
            assert token == started.keys["reseller"]
            seen: list[str] = []

            async def history_shows() -> bool:
                async with httpx.AsyncClient() as http:
                    r = await http.get(url, headers={"Authorization": f"apikey {token}"})
                assert r.status_code == 200, r.text
                seen[:] = [row["actions"] for row in r.json()["result"]]
                # Not only this test's own reads of the log: the demo's, made as the reseller.
                return any(action != "list_activity_log_requests" for action in seen)

            await until(
                history_shows, lambda: f"the demo's history; first page: {seen}", timeout=60
            )

    def test_the_users_own_database_is_not_touched(
        self, demo_env: dict[str, str], data_dir: Path, tmp_path: Path
    ):
        # The user's own embedded database, with data the demo would have overwritten.
        cli(demo_env, "load", "-", stdin=json.dumps(EXAMPLE))
        own = sqlite_url(data_dir / "cloudadmin.db")
        before = snapshot(own)
        with demo(demo_env, tmp_path / "logs") as started:
            assert started.keys and "demo.db" in started.err
            assert status(started.base, started.keys["operator"]) == 200
        assert snapshot(own) == before


class TestRestart:
    def test_changes_survive_and_the_same_keys_still_work(
        self, url_env: dict[str, str], tmp_path: Path
    ):
        with demo(url_env, tmp_path / "logs") as first:
            add_seller(first.base, first.keys["reseller"], "kept@sales.example")
        with demo(url_env, tmp_path / "logs") as second:
            assert second.keys == first.keys
            assert "kept as it is" in second.out and "no longer valid" not in second.out
            for kind, token in second.keys.items():
                assert status(second.base, token) == 200, kind
            assert "kept@sales.example" in seller_emails(second.base, second.keys["reseller"])

    def test_a_key_revoked_through_the_api_is_printed_as_no_longer_valid(
        self, demo_env: dict[str, str], tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as first:
            r = httpx.delete(
                f"{first.base}/iam/clients/2001/tokens/4",
                headers={"Authorization": f"apikey {first.keys['client_admin']}"},
            )
            assert r.status_code == 204, r.text
        with demo(demo_env, tmp_path / "logs") as second:
            member = next(
                line for line in second.out.splitlines() if line.split()[:1] == ["client_member"]
            )
            assert "no longer valid" in member
            assert status(second.base, second.keys["client_member"]) == 401

    def test_a_changed_secret_key_asks_for_reset(
        self, demo_env: dict[str, str], data_dir: Path, tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as first:
            pass
        (data_dir / "secret.key").write_text("another-secret-key")
        done = serve_demo_expecting_exit(demo_env)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "cannot be decrypted" in done.stderr and "--reset" in done.stderr
        with demo(demo_env, tmp_path / "logs", "--reset") as reset:
            assert reset.keys["operator"] != first.keys["operator"]
            assert status(reset.base, reset.keys["operator"]) == 200


class TestReset:
    def test_starts_over_with_new_keys_and_the_old_ones_fail(
        self, demo_env: dict[str, str], tmp_path: Path
    ):
        with demo(demo_env, tmp_path / "logs") as first:
            add_seller(first.base, first.keys["reseller"], "gone@sales.example")
        with demo(demo_env, tmp_path / "logs", "--reset") as reset:
            assert "demo landscape loaded" in reset.out
            assert set(reset.keys) == KINDS
            for kind in KINDS:
                assert reset.keys[kind] != first.keys[kind]
                assert status(reset.base, first.keys[kind]) == 401, kind
                assert status(reset.base, reset.keys[kind]) == 200, kind
            emails = seller_emails(reset.base, reset.keys["reseller"])
            assert "gone@sales.example" not in emails
            assert "jane.seller@acme.example" in emails


@pytest.fixture
def rabbit_url() -> str:
    try:
        with socket.create_connection(("127.0.0.1", 5672), 1):
            return RABBIT_URL
    except OSError:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "RabbitMQ is required under CI=true but 127.0.0.1:5672 does not answer",
                pytrace=False,
            )
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")


class Mailbox:
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        return "250 OK"


class TestLocalServices:
    async def test_a_local_broker_receives_the_demos_events(
        self, demo_env: dict[str, str], data_dir: Path, tmp_path: Path, rabbit_url: str
    ):
        connection = await aio_pika.connect_robust(rabbit_url)
        try:
            channel = await connection.channel()
            queue = await channel.declare_queue(exclusive=True)
            await queue.bind("amq.topic", routing_key="cloudadmin")
            env = {
                **demo_env,
                "CLOUDADMIN_DEMO_AMQP_URL": rabbit_url,
                "CLOUDADMIN_RUN_DISPATCHER": "true",
            }
            with demo(env, tmp_path / "logs") as started:
                assert "publishes to the broker at 127.0.0.1:5672" in started.err
                admin = {"Authorization": f"apikey {started.keys['client_admin']}"}
                async with httpx.AsyncClient(base_url=started.base) as client:
                    r = await client.patch(
                        "/cloud/v1/user_actions/amqp_subscriptions/401",
                        json={"receive_child_client_events": True},
                        headers=admin,
                    )
                assert r.status_code == 200, r.text
                assert "@127.0.0.1:5672/" in r.json()["connection_string"]
                message = None
                deadline = time.monotonic() + 60
                while message is None and time.monotonic() < deadline:
                    message = await queue.get(fail=False, no_ack=True)
                    if message is None:
                        await asyncio.sleep(0.2)
                assert message is not None, "no event arrived from the demo's subscription"
                event = json.loads(message.body)
                assert event["api_group"] == "amqp_subscription" and event["client_id"] == 2001
        finally:
            await connection.close()
        with sqlite3.connect(data_dir / "demo.db") as db:
            (mail_server,) = db.execute("SELECT mail_server FROM branding").fetchone()
        assert json.loads(mail_server) == {}, "no SMTP server listened, yet one is set"

    def test_a_local_smtp_server_becomes_the_resellers_mail_server(
        self, demo_env: dict[str, str], data_dir: Path, tmp_path: Path
    ):
        port = free_port()
        controller = Controller(Mailbox(), hostname="127.0.0.1", port=port)
        controller.start()
        try:
            env = {**demo_env, "CLOUDADMIN_DEMO_SMTP_SERVER": f"127.0.0.1:{port}"}
            with demo(env, tmp_path / "logs") as started:
                assert f"SMTP server at 127.0.0.1:{port}" in started.err
                assert "no broker at" in started.err
        finally:
            controller.stop()
        with sqlite3.connect(data_dir / "demo.db") as db:
            (mail_server,) = db.execute("SELECT mail_server FROM branding").fetchone()
            (subscriptions,) = db.execute("SELECT count(*) FROM amqp_subscriptions").fetchone()
        assert json.loads(mail_server) == {"tls": False, "host": "127.0.0.1", "port": str(port)}
        assert subscriptions == 0, "no broker listened, yet the demo has a subscription"


class TestInstallStamp:
    """scripts/install-stamp: scripts/demo runs pip only when its inputs changed."""

    @staticmethod
    def stamp(cwd: Path, mode: str) -> int:
        return subprocess.run(
            [
                "bash",
                str(ROOT / "scripts" / "install-stamp"),
                mode,
                ".venv/stamp",
                "pyproject.toml",
                "requirements.lock",
            ],
            cwd=cwd,
            env={**os.environ, "PYTHON": sys.executable},
            timeout=60,
        ).returncode

    def test_install_only_when_the_inputs_changed(self, tmp_path: Path):
        shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
        (tmp_path / ".venv").mkdir()
        assert self.stamp(tmp_path, "check") == 1  # never installed
        assert self.stamp(tmp_path, "write") == 0
        assert self.stamp(tmp_path, "check") == 0  # nothing changed: skip pip
        with (tmp_path / "pyproject.toml").open("a") as f:
            f.write("\n# changed\n")
        assert self.stamp(tmp_path, "check") == 1
        assert self.stamp(tmp_path, "write") == 0
        (tmp_path / "requirements.lock").write_text("fastapi==0.115.0\n")
        assert self.stamp(tmp_path, "check") == 1  # a lock file appeared


class TestProbeAddresses:
    @pytest.mark.parametrize(
        ("value", "address"),
        [
            ("127.0.0.1:1025", ("127.0.0.1", 1025)),
            ("[::1]:2525", ("::1", 2525)),
            ("::1", ("::1", 25)),
            ("mail.localhost", ("mail.localhost", 25)),
        ],
    )
    def test_smtp_server(self, value: str, address: tuple[str, int]):
        assert smtp_address(value) == address

    @pytest.mark.parametrize(
        ("url", "address"),
        [
            ("amqp://guest:guest@127.0.0.1:5672/%2F", ("127.0.0.1", 5672)),
            ("amqp://guest:guest@127.0.0.1/%2F", ("127.0.0.1", 5672)),
            ("amqps://u:p@[::1]/vh", ("::1", 5671)),
        ],
    )
    def test_amqp_url(self, url: str, address: tuple[str, int]):
        assert amqp_address(url) == address

    @pytest.mark.parametrize(
        ("host", "base"),
        [
            ("127.0.0.1", "http://127.0.0.1:8000"),
            ("0.0.0.0", "http://127.0.0.1:8000"),
            ("::", "http://[::1]:8000"),
            ("::1", "http://[::1]:8000"),
            ("localhost", "http://localhost:8000"),
        ],
    )
    def test_where_the_demos_history_reaches_its_server(self, host: str, base: str):
        assert local_base(host, 8000) == base

    def test_listening(self):
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            assert listening("127.0.0.1", server.getsockname()[1])
        host, port = closed_address().split(":")
        assert not listening(host, int(port))
