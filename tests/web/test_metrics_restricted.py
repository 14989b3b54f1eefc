"""operations.md, "Who may scrape": with CLOUDADMIN_METRICS_BEARER_TOKEN set, /metrics
and the worker's metrics listener answer only a scraper that presents the token; without
it they answer anyone (the default, for a network only monitoring reaches)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr
from pydantic import ValidationError as SettingsError

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.observability.metrics_access import start_metrics_server
from cloudadmin.web.app_state import app_state
from tests.pool import Checkouts
from tests.servers import free_port

TOKEN = "scrape-5f0c8e1d9a2b4c7e"
REFUSED = [
    ({}, "not_authenticated"),
    ({"Authorization": ""}, "not_authenticated"),
    ({"Authorization": "Bearer wrong-token-of-some-length"}, "token_not_valid"),
    ({"Authorization": f"Bearer {TOKEN}x"}, "token_not_valid"),
    ({"Authorization": f"Bearer {TOKEN[:-1]}"}, "token_not_valid"),
    ({"Authorization": f"Basic {TOKEN}"}, "token_not_valid"),
    ({"Authorization": f"apikey {TOKEN}"}, "token_not_valid"),
]


@pytest.fixture
async def guarded(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, Checkouts]]:
    app = create_app(settings.model_copy(update={"metrics_bearer_token": SecretStr(TOKEN)}))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c, Checkouts(app_state(app).engine)
    await app_state(app).engine.dispose()


class TestServiceMetrics:
    @pytest.mark.parametrize(("headers", "refusal"), REFUSED)
    async def test_without_the_token_401_before_any_database_work(
        self,
        guarded: tuple[httpx.AsyncClient, Checkouts],
        headers: dict[str, str],
        refusal: str,
    ):
        client, checkouts = guarded
        checkouts.start()
        r = await client.get("/metrics", headers=headers)
        assert r.status_code == 401, r.text
        assert r.json()["exception_class"] == refusal
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "cloudadmin_" not in r.text
        assert checkouts.total == 0

    async def test_with_the_token_the_metrics(self, guarded: tuple[httpx.AsyncClient, Checkouts]):
        client, _ = guarded
        for scheme in ("Bearer", "bearer"):
            r = await client.get("/metrics", headers={"Authorization": f"{scheme} {TOKEN}"})
            assert r.status_code == 200, r.text
            assert "# TYPE cloudadmin_http_requests_total counter" in r.text
            assert "cloudadmin_outbox_pending" in r.text

    async def test_unset_anyone_may_scrape(self, client: httpx.AsyncClient):
        r = await client.get("/metrics")
        assert r.status_code == 200
        assert "# TYPE cloudadmin_http_requests_total counter" in r.text


class TestWorkerMetrics:
    def test_the_listener_asks_for_the_same_token(self):
        port = free_port()
        server, thread = start_metrics_server(port, "127.0.0.1", SecretStr(TOKEN))
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            for headers, refusal in REFUSED:
                r = httpx.get(url, headers=headers, timeout=30)
                assert r.status_code == 401, (headers, r.text)
                assert r.json()["exception_class"] == refusal
                assert r.headers["www-authenticate"].startswith("Bearer")
            r = httpx.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            assert r.status_code == 200
            assert "# TYPE cloudadmin_event_deliveries_total counter" in r.text
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=30)

    def test_without_a_token_anyone_may_scrape(self):
        port = free_port()
        server, thread = start_metrics_server(port, "127.0.0.1", None)
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
            assert r.status_code == 200
            assert "cloudadmin_event_deliveries_total" in r.text
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=30)


class TestSetting:
    def test_a_short_token_is_refused_and_an_empty_one_is_unset(self):
        with pytest.raises(SettingsError, match="metrics_bearer_token"):
            Settings(metrics_bearer_token="short")
        assert Settings(metrics_bearer_token="").metrics_bearer_token is None

    def test_the_token_is_never_shown(self):
        settings = Settings(metrics_bearer_token=TOKEN)
        assert TOKEN not in repr(settings)
        assert TOKEN not in str(settings.model_dump())
