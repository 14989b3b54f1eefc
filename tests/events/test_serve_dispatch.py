"""End to end: a real `cloudadmin serve` delivers its events to RabbitMQ by itself, with
one dispatcher among its worker processes (on SQLite and on PostgreSQL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.cli.test_serve import DOCUMENT
from tests.conftest import OUTBOUND_ALLOW
from tests.events.conftest import Inbox
from tests.servers import free_port, wait_until_healthy
from tests.waiting import until

pytestmark = pytest.mark.slow
# The server runs beside the test; blocking process calls are fine here.
# ruff: noqa: ASYNC220, ASYNC221


class TestServeDispatches:
    async def test_subscribe_then_change_then_receive(
        self, inbox: Inbox, rabbit_url: str, tmp_path: Path, database_url: str, app: object
    ):
        # `app` empties the test database; the server is another process on it.
        env = {
            **os.environ,
            "CLOUDADMIN_DATA_DIR": str(tmp_path),
            "CLOUDADMIN_DATABASE_URL": database_url,
            "CLOUDADMIN_SECRET_KEY": "serve-dispatch-secret",
            "CLOUDADMIN_LOG_LEVEL": "INFO",
            "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.1",
            "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        }
        doc = tmp_path / "landscape.json"
        doc.write_text(json.dumps(DOCUMENT))
        loaded = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "load", str(doc)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert loaded.returncode == 0, loaded.stderr
        port = free_port()
        with (tmp_path / "serve.log").open("w") as log:  # the server writes to its own copy
            serve = ["serve", "--port", str(port), "--workers", "2"]
            proc = subprocess.Popen(
                [sys.executable, "-m", "cloudadmin", *serve],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, proc, (tmp_path / "serve.log").read_text)
            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": "apikey 2_reseller-secret"}
            ) as c:
                r = await c.post(
                    "/cloud/v1/user_actions/subscribe_amqp",
                    json={
                        "connection_string": rabbit_url,
                        "exchange": inbox.exchange,
                        "routing_key": inbox.routing_key,
                    },
                )
                assert r.status_code == 204, r.text
                r = await c.post(
                    "/iam/admin/sellers", json={"email": "live@sales.example", "full_name": "Live"}
                )
                assert r.status_code == 200, r.text
            # Subscribing is itself a user action, owed to the new subscription.
            got = await inbox.drain(2, timeout=60)
            assert [json.loads(m.body)["api_group"] for m in got] == ["amqp_subscription", "seller"]
            # The other process (which may start late) has found the lock taken: were it
            # to take it at the stop, the log below would show two dispatchers started.
            await until(
                lambda: "standing by" in (tmp_path / "serve.log").read_text(),
                "the second server process to stand by",
                timeout=60,
            )
            assert len(await inbox.flushed()) == 2  # two server processes, one dispatcher
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log = (tmp_path / "serve.log").read_text()
        started = [ln for ln in log.splitlines() if "dispatcher" in ln and "started" in ln]
        standing_by = [ln for ln in log.splitlines() if "standing by" in ln]
        assert len(started) == 1, log
        assert len(standing_by) == 1, log
