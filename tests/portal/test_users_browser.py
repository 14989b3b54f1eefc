"""docs/portal.md, "Users", in a real browser on both databases: a reseller adds a
seller, whose invitation arrives by mail (the portal's SMTP receiver is the reseller's
mail server); the seller follows the link, sets its password, signs in and sees only
the client assigned to it; blocked, it cannot sign in. The users search (htmx swaps the
results) and a user's edit. With CLOUDADMIN_SCREENSHOTS=1 the users search and the
sellers' list are saved to docs/images/portal-users.png and portal-users-sellers.png."""

from __future__ import annotations

import json
import quopri
import re
import time
import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding, Client, Seller, User
from cloudadmin.kit.crypto import hash_password
from tests.factories import make_client, make_reseller, make_user
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot, sign_in
from tests.portal.people import PASSWORD

pytestmark = pytest.mark.slow

SELLER_PASSWORD = "Amber-Falcon-Ledger-58"


@dataclass(frozen=True)
class Shop:
    """A reseller of this test's own, whose mail goes to the portal's SMTP receiver."""

    reseller_email: str
    assigned_id: int  # its client to be assigned to the new seller
    assigned_company: str
    other_company: str  # its client that stays without a seller
    user_email: str  # a user of the assigned client
    user_id: int


def arrange_shop(portal: Portal) -> Shop:
    tag = uuid.uuid4().hex[:6]

    async def make(session: AsyncSession) -> Shop:
        reseller = await make_reseller(session, company_name=f"Shop {tag}")
        session.add(
            Branding(
                reseller_id=reseller.id,
                domain="",
                public_settings={"brandName": f"Shop {tag}"},
                mail_server={
                    "host": "127.0.0.1",
                    "port": str(portal.smtp_port),
                    "tls": False,
                    "login": "",
                },
                mail_password_encrypted=None,
            )
        )
        owner = await make_user(session, reseller, password_hash=hash_password(PASSWORD))
        assigned = await make_client(session, reseller_id=reseller.id, company_name=f"Kept {tag}")
        other = await make_client(session, reseller_id=reseller.id, company_name=f"Other {tag}")
        user = await make_user(session, assigned, name=f"Pat {tag}")
        return Shop(
            owner.email,
            assigned.id,
            assigned.company_name,
            other.company_name,
            user.email,
            user.id,
        )

    return portal.arrange(make)


def mailed_link(portal: Portal, email: str) -> str:
    """The set-password link of the first mail to ``email`` (the dispatcher sends it)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        for message in list(portal.mailbox.messages):
            if message["to"] == [email]:
                body = str(message["body"])
                # The mail's text may come quoted-printable (its long link's "=").
                if "=3D" in body:
                    body = quopri.decodestring(body.encode()).decode()
                found = re.search(r"https?://\S+", body)
                assert found, message
                return found.group(0)
        assert time.monotonic() < deadline, f"no mail to {email}"
        time.sleep(0.05)


def select_option(page: Page, element_id: str, value: str) -> None:
    page.evaluate(f"document.getElementById({json.dumps(element_id)}).value = {json.dumps(value)}")


def test_a_seller_is_invited_sets_its_password_signs_in_and_is_blocked(page: Page, portal: Portal):
    shop = arrange_shop(portal)
    seller_email = f"seller-{uuid.uuid4().hex[:8]}@example.com"
    sign_in(page, portal, shop.reseller_email)
    page.open(portal.url("/portal/users/sellers"))
    page.click("a.action")  # Add seller
    assert page.evaluate("location.pathname") == "/portal/users/sellers/new"
    assert page.axe_problems() == []
    page.fill_and_submit({"f-full_name": "Ines Invited", "f-email": seller_email})
    assert "The seller was added and its invitation mailed." in page.text()
    assert "Not activated" in page.text()
    screenshot(page, "portal-users-sellers")
    assert page.axe_problems() == []
    assert page.console_problems() == []

    seller_id = portal.arrange(
        lambda s: _scalar(s, select(Seller.id).where(Seller.email == seller_email))
    )
    portal.arrange(
        lambda s: s.execute(
            update(Client).where(Client.id == shop.assigned_id).values(seller_id=seller_id)
        )
    )
    link = mailed_link(portal, seller_email)
    page.forget_cookies()
    page.open(link)
    assert "Set your password" in page.text()
    assert page.axe_problems() == []
    page.fill_and_submit({"f-password": SELLER_PASSWORD, "f-password_again": SELLER_PASSWORD})
    assert "Your password is set" in page.text()

    sign_in(page, portal, seller_email, SELLER_PASSWORD)
    assert f"{seller_email} (seller)" in page.text()
    page.open(portal.url("/portal/accounts"))
    text = page.text()
    assert shop.assigned_company in text
    assert shop.other_company not in text
    page.open(portal.url("/portal/users"))
    assert "Not found" in page.text()
    assert page.console_problems() == []

    # Its reseller blocks it: signed out, and refused at the sign-in.
    page.forget_cookies()
    sign_in(page, portal, shop.reseller_email)
    page.open(portal.url("/portal/users/sellers"))
    assert "Activated" in page.text()
    page.click(f'button[aria-label="Block {seller_email}"]')
    assert "The seller is blocked: it cannot sign in." in page.text()
    page.forget_cookies()
    sign_in(page, portal, seller_email, SELLER_PASSWORD)
    assert page.evaluate("location.pathname") == "/portal/sign-in"
    assert "The e-mail address or the password is wrong." in page.text()
    assert page.console_problems() == []


def test_users_are_searched_and_edited(page: Page, portal: Portal):
    shop = arrange_shop(portal)
    sign_in(page, portal, shop.reseller_email)
    page.open(portal.url("/portal/users"))
    field = "document.getElementById('f-email')"
    page.evaluate(f"{field}.value = {json.dumps(shop.user_email)}")
    page.evaluate("document.querySelector('#user-search button').click()")
    # htmx swaps the results and pushes the address: no page load.
    page.wait_until("document.querySelectorAll('table.users tbody tr').length === 1")
    page.wait_until("location.search.includes('email=')")
    assert shop.user_email in page.text()
    screenshot(page, "portal-users")
    assert page.axe_problems() == []
    page.click("table.users tbody a")
    assert page.evaluate("location.pathname") == f"/portal/users/{shop.user_id}"
    assert page.axe_problems() == []
    select_option(page, "f-lang", "de")
    select_option(page, "f-group", "5")
    page.fill_and_submit({"f-name": "Pat Renamed"})
    assert "The user was saved." in page.text()
    assert page.evaluate("document.getElementById('f-name').value") == "Pat Renamed"
    saved = portal.arrange(lambda s: _user(s, shop.user_id))
    assert saved == ("Pat Renamed", "de", [5])
    # Bad input: the form again, with the field's message and what was typed.
    page.fill_and_submit({"f-name": "x" * 256})
    assert "The form was not accepted; nothing was changed." in page.text()
    assert page.evaluate("document.getElementById('f-name').getAttribute('aria-invalid')") == (
        "true"
    )
    assert portal.arrange(lambda s: _user(s, shop.user_id)) == saved
    assert page.axe_problems() == []
    assert page.console_problems() == []


async def _scalar(session: AsyncSession, stmt: object) -> int:
    return int((await session.execute(stmt)).scalar_one())  # type: ignore[call-overload]


async def _user(session: AsyncSession, user_id: int) -> tuple[str | None, str, list[int]]:
    user = await session.get(User, user_id)
    assert user is not None
    return user.name, user.lang, [g.id for g in user.groups]
