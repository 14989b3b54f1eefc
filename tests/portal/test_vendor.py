"""docs/portal.md, "Vendor settings", over HTTP against the application, on both
databases: the branding (every public setting saved and shown, the uploads checked as
the API checks them, the live preview), the mail server (its password never rendered,
kept when the mask is posted back; the test mail to a real SMTP receiver, and the
class of a failure), and the notification settings (add, edit, enable, disable,
delete; another reseller's ids are the 404 page). A refused form shows what was typed
with its field's message and writes nothing."""

from __future__ import annotations

import io
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller
from PIL import Image
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry, Branding, Client, NotificationSetting
from cloudadmin.iam.reselling.branding.schemas import MAIL_PASSWORD_MASK
from cloudadmin.kit.crypto import hash_password
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Mailbox
from tests.factories import make_user
from tests.portal.people import PASSWORD as PORTAL_PASSWORD
from tests.portal.people import People, sign_in

PASSWORD = "s3cret-smtp-pässword"


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def rows(session: AsyncSession, statement: Any) -> list[Any]:
    """Rows as they are now; the read's transaction ends (SQLite's lock)."""
    session.expire_all()
    found = list((await session.execute(statement)).scalars())
    session.expunge_all()
    await session.rollback()
    return found


async def branding_of(session: AsyncSession, reseller_id: int) -> Branding | None:
    found = await rows(session, select(Branding).where(Branding.reseller_id == reseller_id))
    return found[0] if found else None


async def actions(session: AsyncSession) -> list[tuple[str, str]]:
    """The activity log's (action, status) pairs, oldest first."""
    entries = await rows(session, select(ActivityLogEntry).order_by(ActivityLogEntry.id))
    return [(e.actions, str(e.status_code)) for e in entries]


def png(width: int = 75, height: int = 40) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def ico() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 16), (30, 30, 200)).save(out, "ICO", sizes=[(16, 16)])
    return out.getvalue()


BRANDING = {
    "domain": "MyCompany.example",
    "brandName": "Acme Cloud",
    "websiteLink": "https://acme.example",
    "supportEmail": "help@acme.example",
    "supportPhone": "+1 555 0100",
    "agreementLink": "https://acme.example/terms",
    "entryBaseDomain": "cloud.acme.example",
    "showApiDoc": "true",
    "showTickets": "true",
    "header": "#102030",
    "headerText": "#fafafa",
    "primary": "rgb(200, 30, 30)",
}


class TestBranding:
    async def test_every_public_setting_is_saved_and_shown(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        page = await client.get("/portal/vendor")
        assert page.status_code == 200
        assert page.text.count("<h1>") == 1 and 'aria-current="page">Branding' in page.text
        r = await client.post("/portal/vendor", data={**BRANDING, "csrf_token": token})
        assert r.status_code == 303 and r.headers["location"] == "/portal/vendor?saved=branding"
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.domain == "mycompany.example"
        assert branding.public_settings == {
            "brandName": "Acme Cloud",
            "websiteLink": "https://acme.example",
            "supportEmail": "help@acme.example",
            "supportPhone": "+1 555 0100",
            "agreementLink": "https://acme.example/terms",
            "entryBaseDomain": "cloud.acme.example",
            "showApiDoc": True,
            "showStatusPage": "false",
            "showKnowledgeBase": False,
            "showTickets": True,
            "colors": {"header": "#102030", "headerText": "#fafafa", "primary": "rgb(200, 30, 30)"},
        }
        shown = (await client.get("/portal/vendor?saved=branding")).text
        assert "The branding settings were saved." in shown
        for value in ("mycompany.example", "Acme Cloud", "+1 555 0100", "#102030"):
            assert f'value="{value}"' in shown
        assert re.search(r'id="f-showApiDoc"[^>]*checked', shown)
        assert not re.search(r'id="f-showKnowledgeBase"[^>]*checked', shown)
        # The API reads what the portal saved (the same service).
        assert ("portal.save_branding", "303") in await actions(session)

    async def test_saving_the_branding_keeps_the_mail_server_and_its_password(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        mail = {"host": "smtp.acme.example", "port": "587", "login": "mailer", "tls": "true"}
        r = await client.post(
            "/portal/vendor/mail", data={**mail, "password": PASSWORD, "csrf_token": token}
        )
        assert r.status_code == 303, r.text
        before = await branding_of(session, people.reseller_id)
        assert before is not None
        r = await client.post("/portal/vendor", data={**BRANDING, "csrf_token": token})
        assert r.status_code == 303
        after = await branding_of(session, people.reseller_id)
        assert after is not None
        assert after.mail_server == before.mail_server == {**mail, "tls": True}
        assert after.mail_password_encrypted == before.mail_password_encrypted

    async def test_bad_input_is_shown_again_with_its_messages_and_nothing_is_written(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        typed = {
            **BRANDING,
            "domain": "not a domain!",
            "websiteLink": "ftp://acme.example",
            "brandName": "Acme <b>Cloud</b>",
        }
        r = await client.post("/portal/vendor", data={**typed, "csrf_token": token})
        assert r.status_code == 400
        assert "The form was not accepted; nothing was changed." in r.text
        assert re.search(r'id="e-domain">Enter a valid domain name', r.text)
        assert 'id="f-websiteLink"' in r.text and 'id="e-websiteLink"' in r.text
        assert 'value="not a domain!"' in r.text and 'value="ftp://acme.example"' in r.text
        assert 'value="Acme &lt;b&gt;Cloud&lt;/b&gt;"' in r.text
        assert await branding_of(session, people.reseller_id) is None
        assert ("portal.save_branding", "400") in await actions(session)

    async def test_a_form_without_the_csrf_token_writes_nothing(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.post("/portal/vendor", data=BRANDING)
        assert r.status_code == 403
        assert await branding_of(session, people.reseller_id) is None

    async def test_an_operator_without_a_reseller_account_has_no_branding(
        self, client: httpx.AsyncClient, people: People
    ):
        # The page says so and leads to any reseller's notification settings; the API's
        # rule refuses its change (403).
        token = await sign_in(client, people.emails["operator"])
        page = await client.get("/portal/vendor")
        assert page.status_code == 200 and "your home account is not one" in page.text
        r = await client.post("/portal/vendor", data={**BRANDING, "csrf_token": token})
        assert r.status_code == 403

    async def test_an_operator_whose_home_account_is_a_reseller_manages_its_branding(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        reseller = await session.get(Client, people.reseller_id)
        assert reseller is not None
        hashed = hash_password(PORTAL_PASSWORD)
        operator = await make_user(session, reseller, superuser=True, password_hash=hashed)
        await session.commit()
        token = await sign_in(client, operator.email)
        assert (await client.get("/portal/vendor")).status_code == 200
        r = await client.post("/portal/vendor", data={**BRANDING, "csrf_token": token})
        assert r.status_code == 303
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.public_settings["brandName"] == "Acme Cloud"
        r = await client.get("/portal/vendor/notifications")
        own = f"/portal/vendor/resellers/{people.reseller_id}/notifications"
        assert r.status_code == 303 and r.headers["location"] == own

    async def test_a_sellers_user_gets_the_404_page(
        self, client: httpx.AsyncClient, people: People
    ):
        token = await sign_in(client, people.emails["seller"])
        own = f"/portal/vendor/resellers/{people.reseller_id}/notifications"
        for path in ("/portal/vendor", "/portal/vendor/mail", "/portal/vendor/notifications", own):
            r = await client.get(path)
            assert r.status_code == 404, path
        r = await client.post("/portal/vendor", data={**BRANDING, "csrf_token": token})
        assert r.status_code == 404


class TestUploads:
    async def test_a_logo_and_a_favicon_are_stored_and_shown(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        files = {"logo": ("logo.png", png(), "image/png"), "favicon": ("f.ico", ico(), "x/y")}
        r = await client.post("/portal/vendor/upload", data={"csrf_token": token}, files=files)
        assert r.status_code == 303 and r.headers["location"] == "/portal/vendor?saved=images"
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.logo_path and branding.favicon_path
        assert branding.logo_path.endswith(".png") and branding.favicon_path.endswith(".ico")
        page = (await client.get("/portal/vendor?saved=images")).text
        assert "The images were uploaded." in page
        logo = f"/iam/reselling/files/{branding.logo_path}"
        assert f'src="http://testserver{logo}" alt="The current logo"' in page
        assert f'class="vendor-preview-logo" src="http://testserver{logo}"' in page
        assert (await client.get(logo)).content == png()
        assert ("portal.upload_branding_images", "303") in await actions(session)

    @pytest.mark.parametrize(
        ("part", "content", "message"),
        [
            ("logo", b"GIF89a not what it claims", "Upload a valid image: PNG, JPEG or SVG."),
            (
                "logo",
                b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
                "SVG images that hold a &lt;script&gt; element are not accepted",
            ),
            ("favicon", b"\x89PNG\r\n\x1a\n truncated", "Upload a valid image: ICO or PNG."),
            ("favicon", png(5000, 5000), "The image is too large (5000x5000)"),
        ],
    )
    async def test_a_bad_image_is_the_fields_message_and_nothing_is_written(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        part: str,
        content: bytes,
        message: str,
    ):
        token = await sign_in(client, people.emails["reseller"])
        # A good logo beside a bad favicon is not stored either.
        files = {part: (f"{part}.png", content, "image/png")}
        if part == "favicon":
            files["logo"] = ("logo.png", png(), "image/png")
        r = await client.post("/portal/vendor/upload", data={"csrf_token": token}, files=files)
        assert r.status_code == 400
        assert re.search(rf'id="e-{part}">{re.escape(message)}', r.text), r.text
        assert f'id="f-{part}" name="{part}" type="file"' in r.text
        assert await branding_of(session, people.reseller_id) is None

    async def test_a_file_over_its_size_limit_is_a_413_with_its_message(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        big = png() + b"\0" * (1024 * 1024)
        files = {"favicon": ("f.png", big, "image/png")}
        r = await client.post("/portal/vendor/upload", data={"csrf_token": token}, files=files)
        assert r.status_code == 413
        assert 'id="e-favicon">The file must be smaller than 1 MB.' in r.text
        assert await branding_of(session, people.reseller_id) is None

    async def test_no_file_names_both_fields(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        empty = {"logo": ("", b"", "application/octet-stream")}
        r = await client.post("/portal/vendor/upload", data={"csrf_token": token}, files=empty)
        assert r.status_code == 400
        assert 'id="e-logo">Upload a logo, a favicon or both.' in r.text
        assert 'id="e-favicon">Upload a logo, a favicon or both.' in r.text


class TestPreview:
    async def test_the_preview_shows_the_typed_colours_before_saving(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        await sign_in(client, people.emails["reseller"])
        typed = {"header": "#ff0000", "headerText": "white", "primary": "url(x)", "brandName": "Ac"}
        r = await client.get("/portal/vendor/preview", params=typed, headers={"HX-Request": "true"})
        assert r.status_code == 200 and "<h1>" not in r.text  # only the fragment
        src = re.search(r'class="vendor-preview-header" src="([^"]+)"', r.text)
        assert src is not None
        image_url = src.group(1).replace("&amp;", "&")
        assert "header=%23ff0000" in image_url and "primary=%231f5fbf" in image_url
        assert "“url(x)” (primary) is not a colour the preview can draw" in r.text
        svg = await client.get(image_url)
        assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
        assert 'fill="#ff0000"' in svg.text and 'fill="white"' in svg.text and ">Ac<" in svg.text
        assert svg.headers["content-security-policy"].startswith("default-src 'self'")
        assert await branding_of(session, people.reseller_id) is None  # nothing saved
        # Without htmx the preview is a page of its own.
        page = await client.get("/portal/vendor/preview", params=typed)
        assert page.status_code == 200 and "<h1>Preview</h1>" in page.text

    async def test_what_the_image_draws_cannot_escape_its_attributes(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        hostile = '"/><script>alert(1)</script>'
        svg = await client.get(
            "/portal/vendor/preview.svg", params={"header": hostile, "brandName": hostile}
        )
        assert "<script>" not in svg.text
        assert 'fill="#ffffff"' in svg.text  # not a colour: the default
        assert "&lt;script&gt;" in svg.text  # the brand name, escaped


class TestMailServer:
    async def test_the_password_is_never_shown_and_the_mask_keeps_it(
        self, app: Any, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        typed = {
            "fromEmail": "noreply@acme.example",
            "host": "smtp.acme.example",
            "port": "465",
            "tls": "true",
            "login": "mailer",
            "password": PASSWORD,
        }
        r = await client.post("/portal/vendor/mail", data={**typed, "csrf_token": token})
        assert r.status_code == 303 and r.headers["location"] == "/portal/vendor/mail?saved=mail"
        box = app_state(app).secret_box
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.mail_password_encrypted
        assert box.decrypt(branding.mail_password_encrypted) == PASSWORD
        assert branding.public_settings["fromEmail"] == "noreply@acme.example"
        page = (await client.get("/portal/vendor/mail?saved=mail")).text
        assert "The mail server settings were saved." in page
        assert PASSWORD not in page and branding.mail_password_encrypted not in page
        assert f'type="password"\n value="{MAIL_PASSWORD_MASK}"' in page
        assert 'value="smtp.acme.example"' in page and 'value="noreply@acme.example"' in page
        # The mask posted back keeps the password; another port is saved.
        r = await client.post(
            "/portal/vendor/mail",
            data={**typed, "port": "587", "password": MAIL_PASSWORD_MASK, "csrf_token": token},
        )
        assert r.status_code == 303
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.mail_server["port"] == "587"
        assert branding.mail_password_encrypted
        assert box.decrypt(branding.mail_password_encrypted) == PASSWORD
        # An emptied field removes it.
        r = await client.post(
            "/portal/vendor/mail", data={**typed, "password": "", "csrf_token": token}
        )
        assert r.status_code == 303
        branding = await branding_of(session, people.reseller_id)
        assert branding is not None and branding.mail_password_encrypted is None
        assert 'value=""' in (await client.get("/portal/vendor/mail")).text

    async def test_a_bad_host_is_shown_again_and_a_typed_password_is_not(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        typed = {"host": "u@mail.example", "port": "99999", "password": PASSWORD}
        r = await client.post("/portal/vendor/mail", data={**typed, "csrf_token": token})
        assert r.status_code == 400
        assert re.search(r'id="e-host">Enter a host name or an IP address', r.text)
        assert re.search(r'id="e-port">Enter a port number from 1 to 65535', r.text)
        assert 'value="u@mail.example"' in r.text
        assert PASSWORD not in r.text and "The new password was not kept" in r.text
        assert await branding_of(session, people.reseller_id) is None

    async def test_an_address_the_outbound_policy_refuses_is_the_hosts_message(
        self, app: Any, settings: Settings, people: People, session: AsyncSession
    ):
        closed = create_app(settings.model_copy(update={"outbound_allow": []}))
        try:
            transport = httpx.ASGITransport(app=closed, client=("203.0.113.7", 40000))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                token = await sign_in(c, people.emails["reseller"])
                r = await c.post(
                    "/portal/vendor/mail",
                    data={"host": "127.0.0.1", "port": "25", "csrf_token": token},
                )
                assert r.status_code == 400
                assert 'id="e-host">Connections to this address are not allowed' in r.text
        finally:
            await app_state(closed).throttle.close()
            await app_state(closed).engine.dispose()
        assert await branding_of(session, people.reseller_id) is None


async def save_mail_server(
    client: httpx.AsyncClient, token: str, port: int, host: str = "127.0.0.1"
) -> None:
    r = await client.post(
        "/portal/vendor/mail",
        data={"fromEmail": "noreply@acme.example", "host": host, "port": str(port)}
        | {"csrf_token": token},
    )
    assert r.status_code == 303, r.text


class TestTestMail:
    async def test_a_test_mail_reaches_the_signed_in_user(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        smtp: tuple[Mailbox, int],
    ):
        mailbox, port = smtp
        token = await sign_in(client, people.emails["reseller"])
        page = (await client.get("/portal/vendor/mail")).text
        assert "Save a mail server first" in page and "Send a test mail" not in page
        await save_mail_server(client, token, port)
        r = await client.post("/portal/vendor/mail/test", data={"csrf_token": token})
        assert r.status_code == 200
        email = people.emails["reseller"]
        assert f"A test mail was sent to {email}: the mail server accepted it." in r.text
        [mail] = mailbox.messages
        assert mail["to"] == [email] and mail["from"] == "noreply@acme.example"
        assert mail["subject"].startswith("Test mail from ")
        assert ("portal.send_test_mail", "200") in await actions(session)

    async def test_a_refusing_server_shows_only_the_class_of_the_failure(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        await save_mail_server(client, token, free_port())  # nothing listens there
        r = await client.post("/portal/vendor/mail/test", data={"csrf_token": token})
        assert r.status_code == 502
        assert "The test mail was not sent: Could not connect to the mail server." in r.text
        assert "Errno" not in r.text and "onnection refused" not in r.text
        assert ("portal.send_test_mail", "502") in await actions(session)

    async def test_a_server_the_outbound_policy_no_longer_allows_is_not_connected_to(
        self, app: Any, settings: Settings, people: People, session: AsyncSession
    ):
        # Saved while it was allowed; the policy changed since.
        session.add(
            Branding(
                reseller_id=people.reseller_id,
                domain="",
                public_settings={},
                mail_server={"host": "127.0.0.1", "port": "25", "tls": False, "login": None},
                deleted=False,
            )
        )
        await session.commit()
        closed = create_app(settings.model_copy(update={"outbound_allow": []}))
        try:
            transport = httpx.ASGITransport(app=closed, client=("203.0.113.7", 40000))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                token = await sign_in(c, people.emails["reseller"])
                r = await c.post("/portal/vendor/mail/test", data={"csrf_token": token})
        finally:
            await app_state(closed).throttle.close()
            await app_state(closed).engine.dispose()
        assert r.status_code == 502
        assert "does not allow the address of the mail server." in r.text
        assert "127.0.0.1 is" not in r.text

    async def test_without_a_saved_mail_server_nothing_is_sent(
        self, client: httpx.AsyncClient, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        r = await client.post("/portal/vendor/mail/test", data={"csrf_token": token})
        assert r.status_code == 400
        assert "No mail server is saved" in r.text


async def settings_of(session: AsyncSession, reseller_id: int) -> list[NotificationSetting]:
    return await rows(
        session,
        select(NotificationSetting)
        .where(NotificationSetting.reseller_id == reseller_id)
        .order_by(NotificationSetting.id),
    )


class TestNotificationSettings:
    async def test_add_edit_disable_enable_and_delete(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/vendor/notifications")
        base = f"/portal/vendor/resellers/{people.reseller_id}/notifications"
        assert r.status_code == 303 and r.headers["location"] == base
        assert "No addresses yet." in (await client.get(base)).text
        r = await client.post(
            base,
            data={
                "notification_type": "failed_login",
                "email": "sec@acme.example",
                "enabled": "true",
                "csrf_token": token,
            },
        )
        assert r.status_code == 303 and r.headers["location"] == f"{base}?saved=added"
        [row] = await settings_of(session, people.reseller_id)
        assert (row.notification_type, row.email, row.enabled) == (
            "failed_login",
            "sec@acme.example",
            True,
        )
        listed = (await client.get(f"{base}?saved=added")).text
        assert "The notification setting was added." in listed
        assert "sec@acme.example" in listed and "Failed sign-ins" in listed
        assert '<th scope="col">E-mail address</th>' in listed

        edit = await client.get(f"{base}/{row.id}")
        assert edit.status_code == 200 and 'value="sec@acme.example"' in edit.text
        r = await client.post(
            f"{base}/{row.id}",
            data={
                "notification_type": "deletion_request",
                "email": "del@acme.example",
                "enabled": "true",
                "csrf_token": token,
            },
        )
        assert r.status_code == 303
        [row] = await settings_of(session, people.reseller_id)
        assert (row.notification_type, row.email) == ("deletion_request", "del@acme.example")

        r = await client.post(f"{base}/{row.id}/disable", data={"csrf_token": token})
        assert r.status_code == 303
        assert not (await settings_of(session, people.reseller_id))[0].enabled
        # Through htmx: the list's part, not the page.
        r = await client.post(
            f"{base}/{row.id}/enable",
            headers={"HX-Request": "true", "X-CSRF-Token": token},
        )
        assert r.status_code == 200 and "<h1>" not in r.text
        assert 'id="notification-list"' in r.text and "was enabled" in r.text
        assert (await settings_of(session, people.reseller_id))[0].enabled

        r = await client.post(f"{base}/{row.id}/delete", data={"csrf_token": token})
        assert r.status_code == 303
        assert await settings_of(session, people.reseller_id) == []
        assert (
            await client.post(f"{base}/{row.id}/delete", data={"csrf_token": token})
        ).status_code == 404
        done = [a for a, _ in await actions(session) if "notification" in a]
        assert done == [
            "portal.add_notification_setting",
            "portal.update_notification_setting",
            "portal.disable_notification_setting",
            "portal.enable_notification_setting",
            "portal.delete_notification_setting",
            "portal.delete_notification_setting",
        ]

    async def test_bad_input_is_shown_again_and_nothing_is_written(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["reseller"])
        base = f"/portal/vendor/resellers/{people.reseller_id}/notifications"
        r = await client.post(
            base,
            data={"notification_type": "billing", "email": "not an e-mail", "csrf_token": token},
        )
        assert r.status_code == 400
        assert 'id="e-email"' in r.text and 'id="e-notification_type"' in r.text
        assert 'value="not an e-mail"' in r.text
        assert await settings_of(session, people.reseller_id) == []

    async def test_another_resellers_ids_are_the_404_page(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        theirs = NotificationSetting(
            reseller_id=people.other_reseller_id,
            notification_type="failed_login",
            email="theirs@other.example",
        )
        session.add(theirs)
        await session.commit()
        token = await sign_in(client, people.emails["reseller"])
        own = f"/portal/vendor/resellers/{people.reseller_id}/notifications"
        other = f"/portal/vendor/resellers/{people.other_reseller_id}/notifications"
        for path in (
            f"{own}/{theirs.id}",
            f"{other}/{theirs.id}",
            other,
            f"{own}/x",
            f"{own}/99999999999",
        ):
            r = await client.get(path)
            assert r.status_code == 404, path
            assert "There is nothing here, or nothing you may see." in r.text
            assert "theirs@other.example" not in r.text
        for action in ("delete", "disable"):
            r = await client.post(f"{own}/{theirs.id}/{action}", data={"csrf_token": token})
            assert r.status_code == 404
        r = await client.post(
            other,
            data={"notification_type": "failed_login", "email": "x@y.example", "csrf_token": token},
        )
        assert r.status_code == 404
        [kept] = await settings_of(session, people.other_reseller_id)
        assert kept.enabled and kept.email == "theirs@other.example"

    async def test_an_operator_manages_any_resellers_settings(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        token = await sign_in(client, people.emails["operator"])
        r = await client.get("/portal/vendor/notifications")
        assert r.status_code == 200 and 'name="reseller"' in r.text
        r = await client.get(f"/portal/vendor/notifications?reseller={people.other_reseller_id}")
        other = f"/portal/vendor/resellers/{people.other_reseller_id}/notifications"
        assert r.status_code == 303 and r.headers["location"] == other
        r = await client.post(
            other,
            data={
                "notification_type": "deletion_request",
                "email": "op@x.example",
                "csrf_token": token,
            },
        )
        assert r.status_code == 303
        assert [s.email for s in await settings_of(session, people.other_reseller_id)] == [
            "op@x.example"
        ]
        # A client account is not a reseller: 404, as in the API.
        assert (
            await client.get(f"/portal/vendor/resellers/{people.client_id}/notifications")
        ).status_code == 404
