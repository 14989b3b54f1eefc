"""docs/portal.md in a real browser: signing in and out, a wrong password, a client
user's page (tests/portal/conftest.py starts the server and the browser). With
CLOUDADMIN_SCREENSHOTS=1 the sign-in page is saved to docs/images/portal-sign-in.png."""

from __future__ import annotations

import pytest

from tests.portal.browser import Page
from tests.portal.conftest import Portal, screenshot, sign_in

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("kind", ["operator", "reseller"])
def test_signing_in_shows_the_home_page_with_its_navigation(page: Page, portal: Portal, kind: str):
    page.open(f"{portal.base_url}/portal/")  # not signed in: sent to the sign-in page
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    if kind == "operator":
        screenshot(page, "portal-sign-in")
    sign_in(page, portal, kind)
    assert page.evaluate("location.pathname") == "/portal/"
    text = page.text()
    assert f"{portal.people.emails[kind]} ({kind})" in text
    assert page.evaluate("document.querySelector('nav a').textContent") == "Home"
    # The vendored htmx loaded under the Content-Security-Policy, which blocked nothing.
    assert page.evaluate("typeof htmx") == "object"
    assert page.console_problems() == []
    page.click("nav form button")  # sign out
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    page.open(f"{portal.base_url}/portal/")
    assert page.evaluate("location.pathname") == "/portal/sign-in"


def test_a_wrong_password_keeps_the_sign_in_page(page: Page, portal: Portal):
    sign_in(page, portal, "operator", "not the password")
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    assert "The e-mail address or the password is wrong." in page.text()
    typed = page.evaluate("document.getElementById('email').value")
    assert typed == portal.people.emails["operator"]
    assert page.console_problems() == []


def test_a_client_user_gets_the_not_here_page(page: Page, portal: Portal):
    sign_in(page, portal, "client")
    assert "Not part of the Admin Portal" in page.text()
    assert "Accounts" not in page.text()
    assert page.console_problems() == []
