"""docs/portal.md, "Vendor settings", in a real browser, as a reseller, on both databases:
upload a logo, type colours and see the header's preview change before saving, save;
save a mail server and send a test mail to the real SMTP receiver; add, disable and
delete a notification setting (htmx swaps the list). With CLOUDADMIN_SCREENSHOTS=1 the
branding page is saved to docs/images/portal-vendor.png and the preview to
portal-vendor-preview.png."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot, sign_in

pytestmark = pytest.mark.slow


def wait_until(page: Page, condition: str) -> None:
    """Waits until the JavaScript expression ``condition`` holds on the page (an htmx
    swap changes the page without loading another)."""
    driver = page._driver  # noqa: SLF001 (the Page has no wait of its own)
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.execute_script(f"return !!({condition})"))


def type_into(page: Page, element_id: str, value: str) -> None:
    field = page._driver.find_element(By.ID, element_id)  # noqa: SLF001
    field.clear()
    field.send_keys(value)


async def stored_public(session: AsyncSession, reseller_id: int) -> dict[str, Any]:
    """The reseller's stored public settings (empty before the first save)."""
    branding = await session.get(Branding, reseller_id)
    return dict(branding.public_settings or {}) if branding else {}


def logo_file(tmp_path: Path) -> Path:
    path = tmp_path / "logo.png"
    image = Image.new("RGB", (150, 80), (255, 255, 255))
    image.paste((220, 80, 20), (10, 10, 140, 70))
    out = io.BytesIO()
    image.save(out, "PNG")
    path.write_bytes(out.getvalue())
    return path


def test_a_reseller_uploads_a_logo_previews_its_colours_and_saves(
    page: Page, portal: Portal, tmp_path: Path
):
    sign_in(page, portal, "reseller")
    page.open(portal.url("/portal/vendor"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Vendor settings"
    # The logo: a file chosen and uploaded as a person does.
    chosen = page._driver.find_element(By.ID, "f-logo")  # noqa: SLF001
    chosen.send_keys(str(logo_file(tmp_path)))
    page.click('form[action="/portal/vendor/upload"] button')
    assert "The images were uploaded." in page.text()
    wait_until(page, "document.querySelector('.vendor-preview-logo').naturalWidth === 150")

    # Typed colours change the preview before anything is saved.
    before = page.evaluate("document.querySelector('.vendor-preview-header').src")
    type_into(page, "f-brandName", "Acme Cloud")
    type_into(page, "f-header", "#0b3d91")
    type_into(page, "f-headerText", "#ffffff")
    type_into(page, "f-primary", "#e4572e")
    wait_until(
        page,
        "document.querySelector('.vendor-preview-header').src.includes('primary=%23e4572e')"
        " && document.querySelector('.vendor-preview-header').complete"
        " && document.querySelector('.vendor-preview-header').naturalWidth > 0",
    )
    after = page.evaluate("document.querySelector('.vendor-preview-header').src")
    assert after != before and "header=%230b3d91" in after and "brandName=Acme+Cloud" in after
    alt = page.evaluate("document.querySelector('.vendor-preview-header').alt")
    assert "header colour #0b3d91" in alt and "brand name Acme Cloud" in alt
    assert page.evaluate("document.querySelector('.vendor-preview-logo').naturalWidth") == 150
    page._driver.execute_script(  # noqa: SLF001
        "document.querySelector('.vendor-live fieldset').scrollIntoView()"
    )
    screenshot(page, "portal-vendor-preview")
    # Nothing is saved yet.
    assert "colors" not in portal.arrange(lambda s: stored_public(s, portal.people.reseller_id))

    # Saved: the preview request above has been answered, none is under way.
    type_into(page, "f-supportEmail", "help@acme.example")
    page.click("main form.vendor-branding button")
    assert "The branding settings were saved." in page.text()
    assert page.evaluate("document.getElementById('f-primary').value") == "#e4572e"
    assert "primary=%23e4572e" in page.evaluate(
        "document.querySelector('.vendor-preview-header').src"
    )
    stored = portal.arrange(lambda s: stored_public(s, portal.people.reseller_id))
    assert stored["colors"] == {"header": "#0b3d91", "headerText": "#ffffff", "primary": "#e4572e"}
    assert stored["brandName"] == "Acme Cloud" and stored["supportEmail"] == "help@acme.example"
    screenshot(page, "portal-vendor")
    assert page.axe_problems() == []
    assert page.console_problems() == []


def test_a_reseller_sends_a_test_mail_and_manages_notification_settings(page: Page, portal: Portal):
    sign_in(page, portal, "reseller")
    page.open(portal.url("/portal/vendor/mail"))
    page.fill_and_submit(
        {
            "f-fromEmail": "noreply@acme.example",
            "f-host": "127.0.0.1",
            "f-port": str(portal.smtp_port),
            "f-login": "",
        }
    )
    assert "The mail server settings were saved." in page.text()
    sent_before = len(portal.mailbox.messages)
    page.click('form[action="/portal/vendor/mail/test"] button')
    email = portal.people.emails["reseller"]
    assert f"A test mail was sent to {email}" in page.text()
    mails = [m for m in portal.mailbox.messages[sent_before:] if m["to"] == [email]]
    assert [m["subject"].startswith("Test mail from ") for m in mails] == [True]
    assert page.axe_problems() == []

    # Notification settings: the list is the reseller's own.
    page.open(portal.url("/portal/vendor/notifications"))
    own = f"/portal/vendor/resellers/{portal.people.reseller_id}/notifications"
    assert page.evaluate("location.pathname") == own
    address = f"alerts-{uuid.uuid4().hex[:8]}@acme.example"
    type_into(page, "f-email", address)
    page.click('form[aria-labelledby="add-heading"] button')
    assert "The notification setting was added." in page.text()
    row = (
        "Array.from(document.querySelectorAll('#notification-list tr'))"
        f".find(r => r.textContent.includes('{address}'))"
    )
    assert "Enabled" in page.evaluate(f"{row}.textContent")
    assert page.axe_problems() == []

    # Disable and delete through htmx: the list is swapped, the page stays.
    page.evaluate(f"{row}.querySelector('form[action$=\"/disable\"] button').click()")
    wait_until(page, f"document.body.textContent.includes('was disabled') && {row}")
    assert "Disabled" in page.evaluate(f"{row}.textContent")
    page.evaluate(f"{row}.querySelector('form[action$=\"/delete\"] button').click()")
    wait_until(page, f"document.body.textContent.includes('was deleted') && !{row}")
    assert address not in page.text()
    assert page.console_problems() == []
