"""The walk's server: a real `cloudadmin serve` on loopback, its database (a SQLite file,
or a PostgreSQL database of its own) filled by `cloudadmin load` with the demo's
landscape. One per database for the whole module.

The reseller's mail server is an aiosmtpd on loopback (the demo's, when it finds one),
so that an invitation has somewhere to go; the server's dispatcher delivers it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from cloudadmin.demo.landscape import build_demo
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.deploy.processes import Process, cli, start_server
from tests.servers import free_port, wait_until_healthy

ROOT = Path(__file__).resolve().parents[2]
# The suite's own settings that the server keeps: its cheap password hashing (conftest).
KEPT = ("CLOUDADMIN_TEST_", "CLOUDADMIN_PASSWORD_HASH_")


@dataclass
class DemoServer:
    base_url: str
    keys: dict[str, str]
    process: Process
    mailbox: Mailbox


class Mailbox:
    """What the reseller's mail server received: (recipients, message) per mail."""

    def __init__(self) -> None:
        self.mails: list[tuple[list[str], str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.mails.append((list(envelope.rcpt_tos), envelope.content.decode(errors="replace")))
        return "250 OK"


def server_env(database_url: str, data_dir: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_") or k.startswith(KEPT)
    }
    env.update(
        {
            "CLOUDADMIN_DATABASE_URL": database_url,
            "CLOUDADMIN_SECRET_KEY": "sdk-walk-secret",
            "CLOUDADMIN_DATA_DIR": str(data_dir),
            "CLOUDADMIN_OUTBOUND_ALLOW": "127.0.0.0/8,::1",  # the mail server above
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    return env


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def demo_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DemoServer]:
    where = tmp_path_factory.mktemp(f"sdk-walk-{request.param}")
    base = None
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{where / 'walk.db'}"
    else:
        base = postgres_base_url()
        if base is None:
            pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
        url = asyncio.run(create_pg_database(base))
    mailbox = Mailbox()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    try:
        env = server_env(url, where / "data")
        document, keys = build_demo(smtp=("127.0.0.1", smtp.port))
        (where / "demo.json").write_text(json.dumps(document), encoding="utf-8")
        loaded = cli("load", str(where / "demo.json"), env=env)
        assert loaded.returncode == 0, loaded.stderr
        server = start_server(f"serve-{request.param}", env, where)
        assert server.base_url is not None
        try:
            wait_until_healthy(server.base_url, server.proc, server.tail)
            yield DemoServer(server.base_url, keys, server, mailbox)
        finally:
            server.stop()
        # Every answer the walk read was a good one; nothing failed behind them either.
        log = server.log.read_text(errors="replace")
        assert "Traceback" not in log, server.tail(200)
    finally:
        smtp.stop()
        if base is not None:
            asyncio.run(drop_pg_database(base, url))
