"""The portal's test fixtures.

Over HTTP (``client``, from tests/conftest.py): ``people``, arranged in the test's
database; ``tests.portal.people.sign_in`` signs a client in.

In a real browser: ``portal`` is a real ``cloudadmin serve`` per database with the
people arranged, a real SMTP receiver (aiosmtpd: ``portal.mailbox``) and its dispatcher
running, started once per test process; ``page`` is headless Chromium (Selenium and
chromedriver) with no cookie, page or log of another test. Tests that share the server
make their own rows (unique names), never rely on another test's. With
CLOUDADMIN_SCREENSHOTS=1, ``screenshot(page, name)`` saves docs/images/<name>.png.
Under CI=true a missing Chromium or chromedriver fails the tests; elsewhere they skip.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from tests.conftest import OUTBOUND_ALLOW
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.deploy.processes import Process, cli, start_server, wait_ready
from tests.events.conftest import Mailbox
from tests.portal.browser import Page, chromium_path
from tests.portal.people import PASSWORD, People, arrange_people

T = TypeVar("T")
IMAGES = Path(__file__).parents[2] / "docs" / "images"


@pytest.fixture
async def people(session: AsyncSession) -> People:
    return await arrange_people(session)


@dataclass
class Portal:
    """A running portal: its address, its database, who signs in, and its mail."""

    base_url: str
    database_url: str
    people: People
    mailbox: Mailbox
    smtp_port: int

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def arrange(self, make: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """Runs ``make`` on a session of the portal's database, then commits."""

        async def run() -> T:
            engine = create_async_engine(self.database_url)
            try:
                async with async_sessionmaker(engine, expire_on_commit=False)() as session:
                    made = await make(session)
                    await session.commit()
                    return made
            finally:
                await engine.dispose()

        return asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def chromium() -> str:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "Chromium and its driver are required under CI=true "
                "(apt packages chromium, chromium-driver)"
            )
        pytest.skip("Chromium or chromium-driver is not installed")
    return path


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def portal(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Portal]:
    tmp = tmp_path_factory.mktemp(f"portal-{request.param}")
    base = None
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp / 'portal.db'}"
    else:
        base = postgres_base_url()
        if base is None:
            pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
        url = asyncio.run(create_pg_database(base))
    mailbox = Mailbox()
    smtp_port = _free_port()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": url,
        "CLOUDADMIN_SECRET_KEY": "portal-browser-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp / "data"),
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        "CLOUDADMIN_RUN_DISPATCHER": "true",
        # The platform's mail server (an operator's user has no reseller): the receiver.
        "CLOUDADMIN_SMTP_HOST": "127.0.0.1",
        "CLOUDADMIN_SMTP_PORT": str(smtp_port),
        "CLOUDADMIN_SMTP_TLS": "false",
        "CLOUDADMIN_SMTP_FROM": "portal@cloudadmin.test",
    }
    server: Process | None = None
    try:
        migrated = cli("migrate", env=env)
        assert migrated.returncode == 0, migrated.stderr
        people = _arrange(url)
        server = start_server(f"portal-{request.param}", env, tmp)
        asyncio.run(wait_ready([server]))
        assert server.base_url is not None
        yield Portal(server.base_url, url, people, mailbox, smtp_port)
    finally:
        if server is not None:
            server.stop()
        smtp.stop()
        if base is not None:
            asyncio.run(drop_pg_database(base, url))


def _arrange(url: str) -> People:
    async def run() -> People:
        engine = create_async_engine(url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session:
                return await arrange_people(session)
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.fixture(scope="session")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    running = Page(chromium, tmp_path_factory.mktemp("chromium-profile"))
    yield running
    running.close()


@pytest.fixture
def page(browser: Page) -> Page:
    """The browser, with no cookie, page or log of another test."""
    browser.forget()
    return browser


def sign_in(page: Page, portal: Portal, kind_or_email: str, password: str = PASSWORD) -> None:
    """Signs in through the sign-in form as a person would: ``kind_or_email`` is a kind
    of ``portal.people.emails`` ("operator", "reseller", ...) or an address."""
    email = portal.people.emails.get(kind_or_email, kind_or_email)
    page.open(portal.url("/portal/sign-in"))
    page.fill_and_submit({"email": email, "password": password})


def screenshot(page: Page, name: str) -> None:
    """docs/images/<name>.png, with CLOUDADMIN_SCREENSHOTS=1 (off by default, so that
    runs leave tracked files alone)."""
    if os.environ.get("CLOUDADMIN_SCREENSHOTS") == "1":
        page.screenshot(IMAGES / f"{name}.png")
