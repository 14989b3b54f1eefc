"""docs/portal.md in a real browser: headless Chromium (through Selenium and chromedriver)
against a real `cloudadmin serve`, one server per database for the module. With
CLOUDADMIN_SCREENSHOTS=1 the sign-in page is saved to docs/images/portal-sign-in.png (off
by default, so runs leave tracked files alone). Under CI=true a missing Chromium or
chromedriver fails the tests; elsewhere they are skipped."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from cloudadmin.kit.crypto import hash_password
from tests.conftest import OUTBOUND_ALLOW
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.deploy.processes import Process, cli, start_server, wait_ready
from tests.factories import make_client, make_reseller, make_user
from tests.portal.browser import Page, chromium_path

pytestmark = pytest.mark.slow

PASSWORD = "a browser's password"
SCREENSHOT = Path(__file__).parents[2] / "docs" / "images" / "portal-sign-in.png"


@dataclass
class Portal:
    base_url: str
    emails: dict[str, str]


async def arrange(url: str) -> dict[str, str]:
    engine = create_async_engine(url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session:
            hashed = hash_password(PASSWORD)
            reseller = await make_reseller(session)
            client = await make_client(session, reseller_id=reseller.id)
            operator = await make_user(
                session, await make_client(session), superuser=True, password_hash=hashed
            )
            reseller_user = await make_user(session, reseller, password_hash=hashed)
            client_user = await make_user(session, client, password_hash=hashed)
            await session.commit()
            return {
                "operator": operator.email,
                "reseller": reseller_user.email,
                "client": client_user.email,
            }
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
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
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": url,
        "CLOUDADMIN_SECRET_KEY": "portal-browser-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp / "data"),
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        "CLOUDADMIN_RUN_DISPATCHER": "false",
    }
    server: Process | None = None
    try:
        migrated = cli("migrate", env=env)
        assert migrated.returncode == 0, migrated.stderr
        emails = asyncio.run(arrange(url))
        server = start_server(f"portal-{request.param}", env, tmp)
        asyncio.run(wait_ready([server]))
        assert server.base_url is not None
        yield Portal(server.base_url, emails)
    finally:
        if server is not None:
            server.stop()
        if base is not None:
            asyncio.run(drop_pg_database(base, url))


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    running = Page(chromium, tmp_path_factory.mktemp("chromium-profile"))
    yield running
    running.close()


@pytest.fixture
def page(browser: Page) -> Page:
    """The module's browser, with no cookie, page or log of another test."""
    browser.forget()
    return browser


def sign_in(page: Page, portal: Portal, email: str, password: str = PASSWORD) -> None:
    page.open(f"{portal.base_url}/portal/sign-in")
    page.fill_and_submit({"email": email, "password": password})


@pytest.mark.parametrize("kind", ["operator", "reseller"])
def test_signing_in_shows_the_home_page_with_its_navigation(page: Page, portal: Portal, kind: str):
    page.open(f"{portal.base_url}/portal/")  # not signed in: sent to the sign-in page
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    if kind == "operator" and os.environ.get("CLOUDADMIN_SCREENSHOTS") == "1":
        page.screenshot(SCREENSHOT)
    sign_in(page, portal, portal.emails[kind])
    assert page.evaluate("location.pathname") == "/portal/"
    text = page.text()
    assert f"{portal.emails[kind]} ({kind})" in text
    assert page.evaluate("document.querySelector('nav a').textContent") == "Home"
    # The vendored htmx loaded under the Content-Security-Policy, which blocked nothing.
    assert page.evaluate("typeof htmx") == "object"
    assert page.console_problems() == []
    page.click("nav form button")  # sign out
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    page.open(f"{portal.base_url}/portal/")
    assert page.evaluate("location.pathname") == "/portal/sign-in"


def test_a_wrong_password_keeps_the_sign_in_page(page: Page, portal: Portal):
    sign_in(page, portal, portal.emails["operator"], "not the password")
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    assert "The e-mail address or the password is wrong." in page.text()
    assert page.evaluate("document.getElementById('email').value") == portal.emails["operator"]
    assert page.console_problems() == []


def test_a_client_user_gets_the_not_here_page(page: Page, portal: Portal):
    sign_in(page, portal, portal.emails["client"])
    assert "Not part of the Admin Portal" in page.text()
    assert "(coming)" not in page.text()
    assert page.console_problems() == []
