"""A database the service cannot use answers 503 with Retry-After, whatever the
reason: a wrong PostgreSQL database name or role (refused at connect time) as much as
a closed port; /readyz says so too (issue 13). The real app, in process, on a database that
refuses it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.app_state import app_state
from tests.databases import postgres_base_url, with_database


def _with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def _postgres(change: str) -> str:
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    if change == "database":
        return with_database(base, "cloudadmin_no_such_database")
    return _with_user(base, "cloudadmin_no_such_role")


@pytest.fixture(params=["unknown database", "unknown role", "sqlite path is a directory"])
def broken_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "unknown database":
        return _postgres("database")
    if request.param == "unknown role":
        return _postgres("user")
    return f"sqlite+aiosqlite:///{tmp_path}"


@pytest.fixture
async def broken(broken_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    # The kept engines' connections (tests/conftest.py) have worker threads of their own.
    earlier = set(threading.enumerate())
    app = create_app(
        Settings(database_url=broken_url, secret_key="test-secret-key", data_dir=tmp_path / "data")
    )
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    await app_state(app).engine.dispose()
    # aiosqlite's worker thread of a failed connection still reports to this loop once
    # it stops: let it, before the loop closes.
    for thread in set(threading.enumerate()) - earlier:
        if "_connection_worker_thread" in thread.name:
            await asyncio.to_thread(thread.join, 30)


KEY = {"Authorization": "apikey 1_not-checked-before-the-database-answers"}


def assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert int(r.headers["Retry-After"]) >= 1
    assert r.json()["exception_class"] == "ServiceUnavailable"


class TestReadiness:
    async def test_readyz_is_503_with_retry_after(self, broken: httpx.AsyncClient):
        assert_unavailable(await broken.get("/readyz"))

    async def test_healthz_still_answers(self, broken: httpx.AsyncClient):
        assert (await broken.get("/healthz")).status_code == 200


class TestRequests:
    async def test_a_read_is_503(self, broken: httpx.AsyncClient):
        assert_unavailable(await broken.get("/iam/admin/sellers/1", headers=KEY))

    async def test_a_change_is_503(self, broken: httpx.AsyncClient):
        assert_unavailable(
            await broken.post(
                "/iam/admin/sellers",
                headers=KEY,
                json={"email": "jane@sales.example", "full_name": "Jane Seller"},
            )
        )

    async def test_concurrent_requests_are_all_503(self, broken: httpx.AsyncClient):
        answers = await asyncio.gather(
            *(broken.get("/iam/activity_log/requests", headers=KEY) for _ in range(5))
        )
        for r in answers:
            assert_unavailable(r)


class TestLog:
    async def test_the_reason_is_logged_as_a_warning(
        self, broken: httpx.AsyncClient, broken_url: str, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level("WARNING", logger="cloudadmin.errors"):
            await broken.get("/iam/admin/sellers/1", headers=KEY)
        found = [r.getMessage() for r in caplog.records if r.name == "cloudadmin.errors"]
        assert len(found) == 1 and found[0].startswith("database unavailable: "), found
        expected = {"postgresql": ("does not exist",), "sqlite": ("unable to open",)}
        assert any(text in found[0] for text in expected[broken_url.split("+")[0]]), found
