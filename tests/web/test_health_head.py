"""HEAD /healthz and /readyz: what GET answers, without a body (load balancers probe
with HEAD)."""

from __future__ import annotations

from pathlib import Path

import httpx

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.app_state import app_state


class TestHead:
    async def test_healthz(self, client: httpx.AsyncClient):
        r = await client.head("/healthz")
        assert r.status_code == 200 and r.content == b""

    async def test_readyz_with_the_database_up(self, client: httpx.AsyncClient):
        r = await client.head("/readyz")
        assert r.status_code == 200 and r.content == b""

    async def test_readyz_with_the_database_down(self, tmp_path: Path):
        # Nothing listens on port 9 of loopback: the database does not answer.
        app = create_app(
            Settings(
                database_url="postgresql+asyncpg://nobody@127.0.0.1:9/none",
                secret_key="k",
                data_dir=tmp_path,
            )
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            r = await c.head("/readyz")
            healthy = await c.head("/healthz")
        await app_state(app).engine.dispose()
        assert r.status_code == 503 and r.content == b""
        assert r.headers["retry-after"]
        assert healthy.status_code == 200

    async def test_not_in_the_openapi_document(self, client: httpx.AsyncClient):
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert set(paths["/healthz"]) == {"get"} and set(paths["/readyz"]) == {"get"}
