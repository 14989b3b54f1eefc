"""`cloudadmin events status`: pending, delivered and failing counts per subscription."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.factories import Landscape, auth

SELLERS = "/iam/admin/sellers"


def status_output(settings: Settings, tmp_path: Path) -> str:
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": settings.effective_database_url,
        "CLOUDADMIN_SECRET_KEY": settings.resolved_secret_key(),
        "CLOUDADMIN_DATA_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "cloudadmin", "events", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


class TestEventsStatus:
    async def test_counts_and_failing_subscription_with_masked_error(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        settings: Settings,
        tmp_path: Path,
        caplog: pytest.LogCaptureFixture,
    ):
        good = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        bad = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            "amqp://guest:pw-never-shown@127.0.0.1:1/%2F",
            exchange="x",
            routing_key="y",
        )
        good_id, bad_id = good.id, bad.id
        for i in range(2):
            await client.post(
                SELLERS,
                json={"email": f"s{i}@sales.example", "full_name": "S"},
                headers=auth(ls.reseller),
            )
        await client.patch(
            f"/iam/clients/{ls.client_account.id}",
            json={"name": "Renamed"},
            headers=auth(ls.client_admin),
        )
        dispatcher = Dispatcher(
            app_state(app).engine,
            app_state(app).secret_box,
            lanes=1,
            outbound=app_state(app).outbound,
        )
        with caplog.at_level(logging.WARNING, logger="cloudadmin.dispatcher"):
            await dispatch_all(dispatcher)
        await dispatcher.brokers.close()
        assert any("127.0.0.1:1" in r.getMessage() for r in caplog.records)
        assert "pw-never-shown" not in caplog.text

        lines = {
            int(line.split()[0]): line.split()
            for line in status_output(settings, tmp_path).splitlines()
            if line.split() and line.split()[0].isdigit()
        }
        assert lines[good_id][2:5] == ["0", "2", "ok"]
        assert lines[bad_id][2:5] == ["1", "0", "failing"]
        out = " ".join(lines[bad_id])
        assert "127.0.0.1:1" in out and "pw-never-shown" not in out
