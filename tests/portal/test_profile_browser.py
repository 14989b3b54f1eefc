"""docs/portal.md, "Signing in" and "Profile", in a real browser against a real serve on
both databases: a password reset through the real SMTP receiver (the platform's mail
server), the profile's sessions, two-factor enrolment (the code computed with pyotp from
the secret the page shows) and a sign-in with the code, a password change, an API token
created and revoked, and an idle session sent to the sign-in page. With
CLOUDADMIN_SCREENSHOTS=1: docs/images/portal-profile.png and portal-two-factor.png."""

from __future__ import annotations

import hashlib
import quopri
import re
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pyotp
import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, PortalSession
from cloudadmin.db.types import utcnow
from cloudadmin.kit.crypto import hash_password
from tests.factories import make_user
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot
from tests.portal.people import token_of
from tests.portal.test_accessibility import violations

pytestmark = pytest.mark.slow

NEW_PASSWORD = "the password from the reset link"
CHANGED_PASSWORD = "and the password changed on the profile"
WAIT = 30.0


def fill(page: Page, fields: dict[str, str]) -> None:
    """Types into the inputs with these ids (the page's submit is a separate click)."""
    driver: Any = page._driver
    for name, value in fields.items():
        element = driver.find_element(By.ID, name)
        element.clear()
        element.send_keys(value)


def go(page: Page, selector: str = "main form button") -> None:
    """Clicks ``selector`` and waits for the page it leads to: the old document (marked
    before the click) gone and the new one loaded. Errors of a document that is being
    replaced meanwhile are waited out too (Page.click's staleness check can meet
    Chromium's "Node with given id does not belong to the document")."""
    driver: Any = page._driver
    driver.execute_script("window.__before_click = true")
    driver.find_element(By.CSS_SELECTOR, selector).click()
    WebDriverWait(driver, TIMEOUT, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return window.__before_click === undefined && document.readyState === 'complete'"
        )
    )


def submit(page: Page, fields: dict[str, str], selector: str = "main form button") -> None:
    fill(page, fields)
    go(page, selector)


def sign_in(page: Page, portal: Portal, email: str, password: str) -> None:
    page.open(portal.url("/portal/sign-in"))
    submit(page, {"email": email, "password": password})


def text_of(page: Page, element_id: str) -> str:
    return str(page.evaluate(f"document.getElementById({element_id!r}).textContent"))


def mail_to(portal: Portal, email: str) -> str:
    """The body of the first mail the receiver got for ``email`` (waits for it)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for message in list(portal.mailbox.messages):
            if email in message["to"]:
                body = str(message["body"])
                # A long line (the link) comes quoted-printable.
                return quopri.decodestring(body.encode()).decode() if "=3D" in body else body
        time.sleep(0.1)
    raise AssertionError(f"no mail to {email} within {WAIT} s")


class Axe:
    """axe-core's serious and critical violations of each page checked (docs/portal.md,
    "Accessibility"), reported together at the end."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.found: dict[str, list[str]] = {}

    def check(self, where: str) -> None:
        for v in violations(self.page):
            self.found.setdefault(where, []).append(f"{v['impact']} {v['id']}: {v['help']}")


def next_code(secret: str, after_step: int) -> tuple[str, int]:
    """A code not used yet: of the step after ``after_step``, or the current one if
    later (one step ahead of the clock is accepted)."""
    totp = pyotp.TOTP(secret)
    step = max(after_step + 1, totp.timecode(utcnow()))
    return totp.generate_otp(step), step


def http_sign_in(portal: Portal, email: str, password: str) -> httpx.Client:
    """Another browser's session of the same user (plain HTTP)."""
    other = httpx.Client(base_url=portal.base_url)
    form = other.get("/portal/sign-in")
    r = other.post(
        "/portal/sign-in",
        data={"email": email, "password": password, "csrf_token": token_of(form.text)},
    )
    assert r.status_code == 303 and r.headers["location"] == "/portal/", r.text
    return other


def test_reset_enrol_sign_in_with_a_code_tokens_and_sessions(page: Page, portal: Portal) -> None:
    email = f"profile-{uuid.uuid4().hex[:10]}@reseller.example"

    async def make(session: AsyncSession) -> int:
        account = await session.get(Client, portal.people.reseller_id)
        assert account is not None
        user = await make_user(
            session, account, email=email, password_hash=hash_password("forgotten one")
        )
        return user.id

    user_id = portal.arrange(make)
    axe = Axe(page)

    # --- "Forgot your password?": the mail through the platform's server -------------
    page.open(portal.url("/portal/sign-in"))
    go(page, "main a[href='/portal/forgot-password']")
    axe.check("forgot-password")
    submit(page, {"f-email": email})
    assert "If the address is known, a mail is on its way" in page.text()
    axe.check("forgot-password sent")
    link = re.search(r"http://\S+/portal/reset-password\?token=\S+", mail_to(portal, email))
    assert link, "no link in the mail"
    page.open(link.group(0))
    axe.check("reset-password")
    submit(page, {"f-password": NEW_PASSWORD, "f-password_again": NEW_PASSWORD})
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    assert "Your new password is set" in page.text()
    axe.check("sign-in after the reset")
    # Used once: the link is void now.
    page.open(link.group(0))
    assert "not valid, or it was used already" in page.text()
    assert page.console_problems() == []  # the page's own 400 is no problem
    axe.check("reset-password, the link used")
    sign_in(page, portal, email, NEW_PASSWORD)
    assert page.evaluate("location.pathname") == "/portal/"

    # --- sessions: another browser's, signed out from here ----------------------------
    other = http_sign_in(portal, email, NEW_PASSWORD)
    page.open(portal.url("/portal/profile"))
    text = page.text()
    assert "This session" in text and "Another session" in text
    axe.check("profile")
    go(page, "#sessions-form button")
    assert "Every other session of yours has ended." in page.text()
    assert "Another session" not in page.text()
    assert other.get("/portal/").status_code == 303
    other.close()

    # --- an API token: its secret shown once, then revoked -----------------------------
    fill(page, {"f-name": "browser token"})
    go(page, "#token-form button")
    token = str(page.evaluate("document.getElementById('new-token').value"))
    assert re.fullmatch(r"\d+_[A-Za-z0-9_-]{20,}", token)
    axe.check("token created")
    api = httpx.get(portal.url("/iam/clients/me"), headers={"Authorization": f"apikey {token}"})
    assert api.status_code == 200
    page.open(portal.url("/portal/profile"))
    assert "browser token" in page.text() and token.split("_", 1)[1] not in page.text()
    page.evaluate("document.getElementById('two-factor-heading').scrollIntoView()")
    screenshot(page, "portal-profile")
    go(page, f"#revoke-{token.split('_')[0]}")
    assert "The API token is revoked" in page.text()
    api = httpx.get(portal.url("/iam/clients/me"), headers={"Authorization": f"apikey {token}"})
    assert api.status_code == 401

    # --- two-factor enrolment, the secret read from the page ---------------------------
    go(page, "#two-factor-on-form button")
    assert page.evaluate("document.querySelector('figure.qr svg') !== null")
    secret = text_of(page, "totp-secret").replace(" ", "")
    screenshot(page, "portal-two-factor")
    axe.check("two-factor enrolment")
    code, step = next_code(secret, pyotp.TOTP(secret).timecode(utcnow()) - 1)
    submit(page, {"f-one_time_password": code})
    assert "Two-factor sign-in is on" in page.text()
    assert secret not in page.text()

    # --- sign out, and in again: the password, then the code ---------------------------
    go(page, "nav form button")
    sign_in(page, portal, email, NEW_PASSWORD)
    assert page.evaluate("location.pathname") == "/portal/sign-in/code"
    axe.check("sign-in code")
    code, step = next_code(secret, step)
    submit(page, {"code": code})
    assert page.evaluate("location.pathname") == "/portal/"

    # --- the password changed on the profile -------------------------------------------
    page.open(portal.url("/portal/profile"))
    fill(
        page,
        {
            "f-current_password": NEW_PASSWORD,
            "f-password": CHANGED_PASSWORD,
            "f-password_again": CHANGED_PASSWORD,
        },
    )
    go(page, "#password-form button")
    assert "Your password is changed" in page.text()
    axe.check("profile, two-factor on")
    assert page.console_problems() == []
    assert axe.found == {}

    # --- an idle session: its next page is the sign-in page ----------------------------
    cookie = page._driver.get_cookie("portal_session")
    assert cookie is not None
    digest = hashlib.sha256(cookie["value"].encode()).hexdigest()

    async def age(session: AsyncSession) -> None:
        await session.execute(
            update(PortalSession)
            .where(PortalSession.id_hash == digest, PortalSession.user_id == user_id)
            .values(last_seen_at=utcnow() - timedelta(minutes=31))
        )

    portal.arrange(age)
    page.open(portal.url("/portal/profile"))
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    assert page.evaluate("location.search") == "?next=%2Fportal%2Fprofile"
