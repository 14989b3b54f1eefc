"""Client addresses behind trusted proxies, and secrets kept out of the access log
(configuration.md, "Trusted proxies" and "Access log")."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.logs import RedactAccessQuery, log_config
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape
from tests.servers import free_port, wait_until_healthy

PEER = "203.0.113.7"  # the address the `client` fixture connects from
LOG = "/iam/activity_log/requests"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def recorded_addresses(session: AsyncSession) -> list[str]:
    rows = (
        await session.execute(
            select(ActivityLogEntry.remote_ip_address).order_by(ActivityLogEntry.id)
        )
    ).scalars()
    addresses = list(rows)
    await session.commit()
    return addresses


@pytest.fixture
def trusting(settings: Settings, app: Any) -> Any:
    """A client factory for an app that trusts the given proxies (the `app` fixture has
    emptied the database)."""

    @asynccontextmanager
    async def make(*trusted: str, peer: str = PEER) -> AsyncIterator[httpx.AsyncClient]:
        application = create_app(settings.model_copy(update={"trusted_proxies": list(trusted)}))
        transport = httpx.ASGITransport(app=application, client=(peer, 40000))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                yield c
        finally:
            await app_state(application).engine.dispose()

    return make


async def address_seen(
    trusting: Any,
    session: AsyncSession,
    token: str,
    xff: str | None,
    *trusted: str,
    peer: str = PEER,
) -> str:
    headers = auth(token)
    if xff is not None:
        headers["X-Forwarded-For"] = xff
    async with trusting(*trusted, peer=peer) as c:
        r = await c.get(LOG, headers=headers)
        assert r.status_code == 200, r.text
    return (await recorded_addresses(session))[-1]


class TestForwardedFor:
    async def test_ignored_by_default(self, trusting: Any, session: AsyncSession, ls: Landscape):
        assert await address_seen(trusting, session, ls.reseller, "198.51.100.9") == PEER

    async def test_ignored_from_an_untrusted_peer(
        self, trusting: Any, session: AsyncSession, ls: Landscape
    ):
        seen = await address_seen(trusting, session, ls.reseller, "198.51.100.9", "10.0.0.0/8")
        assert seen == PEER

    async def test_honoured_from_a_trusted_peer(
        self, trusting: Any, session: AsyncSession, ls: Landscape
    ):
        assert (
            await address_seen(trusting, session, ls.reseller, "198.51.100.9", PEER)
            == "198.51.100.9"
        )

    async def test_the_rightmost_untrusted_hop_is_the_client(
        self, trusting: Any, session: AsyncSession, ls: Landscape
    ):
        # The client forged the first entry; our proxy 10.0.0.5 appended the real one.
        xff = "192.0.2.66, 198.51.100.9, 10.0.0.5"
        seen = await address_seen(trusting, session, ls.reseller, xff, PEER, "10.0.0.0/8")
        assert seen == "198.51.100.9"

    async def test_all_hops_trusted_gives_the_leftmost(
        self, trusting: Any, session: AsyncSession, ls: Landscape
    ):
        seen = await address_seen(
            trusting, session, ls.reseller, "10.0.0.9, 10.0.0.5", PEER, "10.0.0.0/8"
        )
        assert seen == "10.0.0.9"

    async def test_ipv6_peer_and_hop(self, trusting: Any, session: AsyncSession, ls: Landscape):
        seen = await address_seen(
            trusting,
            session,
            ls.reseller,
            "2001:db8::42",
            "2001:db8:ffff::/48",
            peer="2001:db8:ffff::1",
        )
        assert seen == "2001:db8::42"

    @pytest.mark.parametrize(
        "xff",
        [
            "not-an-ip<script>",
            "x" * 100,
            "1" * 100,
            "198.51.100.9:443",
            "fe80::1%" + "e" * 60,
            "",
        ],
    )
    async def test_a_value_that_is_not_an_address_is_never_stored(
        self, trusting: Any, session: AsyncSession, ls: Landscape, xff: str
    ):
        assert await address_seen(trusting, session, ls.reseller, xff, PEER) == PEER

    async def test_garbage_stops_the_walk_at_the_last_trusted_hop(
        self, trusting: Any, session: AsyncSession, ls: Landscape
    ):
        seen = await address_seen(
            trusting, session, ls.reseller, "198.51.100.9, junk, 10.0.0.5", PEER, "10.0.0.0/8"
        )
        assert seen == "10.0.0.5"

    async def test_forwarded_proto_from_a_trusted_peer_sets_the_scheme(
        self, trusting: Any, ls: Landscape
    ):
        async with trusting(PEER) as c:
            for _ in range(2):
                await c.get(LOG, headers=auth(ls.reseller))
            r = await c.get(
                LOG,
                params={"limit": 1},
                headers={**auth(ls.reseller), "X-Forwarded-Proto": "https"},
            )
        assert r.json()["next"].startswith("https://testserver/")


class TestAccessLogFilter:
    def record(self, path: str) -> logging.LogRecord:
        return logging.LogRecord(
            "uvicorn.access",
            logging.INFO,
            __file__,
            1,
            '%s - "%s %s HTTP/%s" %d',
            ("127.0.0.1:5000", "GET", path, "1.1", 200),
            None,
        )

    def test_secret_parameters_are_masked(self):
        rec = self.record("/iam/users?password=hunter2&page=2&api_key=k1")
        assert RedactAccessQuery().filter(rec) is True
        # The mask is percent-encoded, as in the activity log's query_params.
        assert rec.getMessage() == (
            '127.0.0.1:5000 - "GET /iam/users?password=%2A%2A%2A'
            '&page=2&api_key=%2A%2A%2A HTTP/1.1" 200'
        )

    def test_other_queries_are_unchanged(self):
        rec = self.record("/iam/users?page=2&q=a%20b")
        RedactAccessQuery().filter(rec)
        assert rec.getMessage().endswith('"GET /iam/users?page=2&q=a%20b HTTP/1.1" 200')

    def test_is_configured_on_the_access_logger(self, settings: Settings):
        config = log_config(settings)
        assert "redact_query" in config["loggers"]["uvicorn.access"]["filters"]


@pytest.fixture(scope="class")
def server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A real `cloudadmin serve` on loopback over the test database, its log in a file:
    one for the class's tests on each database (it keeps no rows of its own, so each
    test's rows, arranged after the tables were emptied, are what it reads)."""
    tmp_path = tmp_path_factory.mktemp("served")
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "test-secret-key",
        "CLOUDADMIN_DATA_DIR": str(tmp_path),
        "CLOUDADMIN_LOG_LEVEL": "INFO",
        "CLOUDADMIN_RUN_DISPATCHER": "false",
    }
    env.pop("CLOUDADMIN_TRUSTED_PROXIES", None)
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cloudadmin",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            text=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, proc)
            yield base, log_path
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def served(server: tuple[str, Path], ls: Landscape) -> tuple[str, Landscape, Path]:
    base, log_path = server
    return base, ls, log_path


@pytest.mark.slow
class TestServe:
    def test_forwarded_for_from_loopback_is_not_trusted_by_default(
        self, served: tuple[str, Landscape, Path]
    ):
        base, ls, _ = served
        for xff in ("not-an-ip<script>", "x" * 100, "198.51.100.9"):
            r = httpx.get(f"{base}{LOG}", headers={**auth(ls.reseller), "X-Forwarded-For": xff})
            assert r.status_code == 200, r.text
        r = httpx.get(f"{base}{LOG}", headers=auth(ls.reseller))
        assert {e["remote_ip_address"] for e in r.json()["result"]} == {"127.0.0.1"}

    def test_secrets_in_query_strings_stay_out_of_the_access_log(
        self, served: tuple[str, Landscape, Path]
    ):
        base, ls, log_path = served
        httpx.get(f"{base}{LOG}?password=hunter2&limit=5", headers=auth(ls.reseller))
        httpx.get(f"{base}/healthz?token=tok-secret")
        deadline = time.monotonic() + 10
        text = log_path.read_text()
        # The access line is written after the answer is sent: wait for the last one.
        while "/healthz?token=" not in text and time.monotonic() < deadline:
            time.sleep(0.1)
            text = log_path.read_text()
        assert "hunter2" not in text and "tok-secret" not in text
        assert f"{LOG}?password=%2A%2A%2A&limit=5" in text, text[-2000:]
        assert "/healthz?token=%2A%2A%2A" in text, text[-2000:]
