"""docs/portal.md, "Signing in": "Forgot your password?" over HTTP, on both databases.

The link is single use and valid 24 hours (the clock is moved by making the token at an
earlier time), an unknown address gets the same answer as a known one, every request
counts in the failed-authentication throttle, the mail goes through the reseller's mail
server or the platform's, and a reset ends every session of the user."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from aiosmtpd.controller import Controller
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import Branding, MailMessage, PortalSession, User
from cloudadmin.db.types import utcnow
from cloudadmin.events.mail import PASSWORD_RESET, PLATFORM, MailSender, PlatformMailServer
from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.kit.crypto import SecretBox, verify_password
from cloudadmin.kit.outbound import Outbound
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Mailbox
from tests.portal.people import PASSWORD, People, sign_in, token_of

NEW_PASSWORD = "a brand new portal password"
SENT = "If the address is known, a mail is on its way"
LINK = re.compile(r"http://testserver/portal/reset-password\?token=(\S+)")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The platform's mail server is set (an operator's user has no reseller)."""
    return settings.model_copy(
        update={"smtp_host": "127.0.0.1", "smtp_port": 2525, "smtp_tls": False}
    )


def box_of(settings: Settings) -> SecretBox:
    return SecretBox(*settings.secret_keys())


async def ask_reset(client: httpx.AsyncClient, email: str) -> httpx.Response:
    form = await client.get("/portal/forgot-password")
    assert form.status_code == 200, form.text
    return await client.post(
        "/portal/forgot-password", data={"email": email, "csrf_token": token_of(form.text)}
    )


async def reset_mails(session: AsyncSession) -> list[MailMessage]:
    session.expire_all()
    rows = list(
        (
            await session.execute(
                select(MailMessage)
                .where(MailMessage.kind == PASSWORD_RESET)
                .order_by(MailMessage.id)
            )
        ).scalars()
    )
    session.expunge_all()
    await session.rollback()
    return rows


def link_token(settings: Settings, message: MailMessage) -> str:
    body = box_of(settings).decrypt(message.body)
    found = LINK.search(body)
    assert found, body
    return found.group(1)


async def set_new_password(
    client: httpx.AsyncClient, token: str, password: str = NEW_PASSWORD, again: str | None = None
) -> httpx.Response:
    form = await client.get("/portal/reset-password", params={"token": token})
    assert form.status_code == 200, form.text
    return await client.post(
        "/portal/reset-password",
        data={
            "token": token,
            "password": password,
            "password_again": password if again is None else again,
            "csrf_token": token_of(form.text),
        },
    )


async def password_hash(session: AsyncSession, user_id: int) -> str | None:
    session.expire_all()
    found = await session.scalar(select(User.password_hash).where(User.id == user_id))
    await session.rollback()
    return found


async def give_reseller_a_mail_server(session: AsyncSession, reseller_id: int) -> None:
    session.add(
        Branding(
            reseller_id=reseller_id,
            public_settings={"fromEmail": "noreply@reseller.example"},
            mail_server={"host": "127.0.0.1", "port": "2526", "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    await session.commit()


def other_client(app: FastAPI) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("198.51.100.9", 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


class TestAskingForALink:
    async def test_an_unknown_address_gets_the_same_answer_and_no_mail(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        known = await ask_reset(client, people.emails["reseller"].upper())
        unknown = await ask_reset(client, "nobody@example.com")
        assert known.status_code == unknown.status_code == 200
        assert SENT in known.text
        assert known.text == unknown.text
        [mail] = await reset_mails(session)
        # The reseller has no mail server: the platform's sends it, for its reseller.
        assert mail.reseller_id == people.reseller_id
        assert mail.recipients == [people.emails["reseller"]]
        # The link is stored sealed, never in clear.
        assert "reset-password" not in mail.body
        assert link_token(settings, mail)

    async def test_the_reseller_s_own_mail_server_or_the_platform_s(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        await give_reseller_a_mail_server(session, people.reseller_id)
        await ask_reset(client, people.emails["reseller"])
        await ask_reset(client, people.emails["operator"])  # no reseller: the platform
        by_recipient = {m.recipients[0]: m.reseller_id for m in await reset_mails(session)}
        assert by_recipient == {
            people.emails["reseller"]: people.reseller_id,
            people.emails["operator"]: PLATFORM,
        }

    async def test_without_any_mail_server_nothing_is_queued_and_the_answer_is_the_same(
        self, app: FastAPI, settings: Settings, people: People, session: AsyncSession
    ):
        bare = create_app(settings.model_copy(update={"smtp_host": None}))
        try:
            async with other_client(bare) as c:
                r = await ask_reset(c, people.emails["operator"])
                assert r.status_code == 200 and SENT in r.text
        finally:
            await app_state(bare).throttle.close()
            await app_state(bare).engine.dispose()
        assert await reset_mails(session) == []

    async def test_an_inactive_user_gets_no_mail(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        user = await session.get(User, people.user_ids["reseller"])
        assert user is not None
        user.is_active = False
        await session.commit()
        r = await ask_reset(client, people.emails["reseller"])
        assert r.status_code == 200 and SENT in r.text
        assert await reset_mails(session) == []

    async def test_every_request_counts_in_the_failure_throttle(
        self, app: FastAPI, settings: Settings, people: People
    ):
        limited = create_app(settings.model_copy(update={"auth_failure_limit": "2/minute"}))
        try:
            async with other_client(limited) as c:
                for email in (people.emails["operator"], "nobody@example.com"):
                    assert (await ask_reset(c, email)).status_code == 200
                form = await c.get("/portal/forgot-password")
                r = await c.post(
                    "/portal/forgot-password",
                    data={"email": people.emails["operator"], "csrf_token": token_of(form.text)},
                )
                assert r.status_code == 429 and "Too many" in r.text
                assert int(r.headers["retry-after"]) >= 1
        finally:
            await app_state(limited).throttle.close()
            await app_state(limited).engine.dispose()

    async def test_a_post_without_the_form_s_token_is_refused(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        r = await client.post("/portal/forgot-password", data={"email": people.emails["operator"]})
        assert r.status_code == 403
        assert await reset_mails(session) == []

    async def test_a_blank_address_is_a_field_message(self, client: httpx.AsyncClient):
        form = await client.get("/portal/forgot-password")
        r = await client.post(
            "/portal/forgot-password", data={"email": " ", "csrf_token": token_of(form.text)}
        )
        assert r.status_code == 400
        assert 'aria-invalid="true"' in r.text and "Enter the e-mail address" in r.text


class TestTheLink:
    async def test_it_sets_the_password_once_and_ends_every_session(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        email = people.emails["reseller"]
        async with other_client(app) as signed_in:
            await sign_in(signed_in, email)
            await ask_reset(client, email)
            [mail] = await reset_mails(session)
            token = link_token(settings, mail)
            r = await set_new_password(client, token)
            assert r.status_code == 303 and r.headers["location"] == "/portal/sign-in?done=reset"
            # Every session of the user has ended: the other browser is signed out.
            assert (await signed_in.get("/portal/profile")).status_code == 303
        session.expire_all()
        assert await session.scalar(select(PortalSession.id_hash)) is None
        await session.rollback()
        notice = await client.get(r.headers["location"])
        assert "Your new password is set" in notice.text
        stored = await password_hash(session, people.user_ids["reseller"])
        assert stored is not None and verify_password(stored, NEW_PASSWORD)
        await sign_in(client, email, NEW_PASSWORD)
        # Used once: the link is void now (bound to the password hash it changed).
        again = await client.get("/portal/reset-password", params={"token": token})
        assert again.status_code == 400
        assert "not valid, or it was used already" in again.text
        assert 'name="password"' not in again.text

    async def test_a_link_older_than_24_hours_has_expired(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        user = await session.get(User, people.user_ids["operator"])
        assert user is not None
        tokens = SetPasswordTokens(*settings.secret_keys())
        old = tokens.make(user, now=utcnow() - timedelta(hours=24, minutes=1))
        fresh = tokens.make(user, now=utcnow() - timedelta(hours=23, minutes=59))
        await session.rollback()
        r = await client.get("/portal/reset-password", params={"token": old})
        assert r.status_code == 400 and "This link has expired" in r.text
        # The form's post is refused as well, and writes nothing.
        form = await client.get("/portal/forgot-password")
        r = await client.post(
            "/portal/reset-password",
            data={
                "token": old,
                "password": NEW_PASSWORD,
                "password_again": NEW_PASSWORD,
                "csrf_token": token_of(form.text),
            },
        )
        assert r.status_code == 400 and "This link has expired" in r.text
        stored = await password_hash(session, people.user_ids["operator"])
        assert stored is not None and verify_password(stored, PASSWORD)
        assert (await set_new_password(client, fresh)).status_code == 303

    async def test_a_weak_or_mistyped_password_is_a_field_message_and_writes_nothing(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        await ask_reset(client, people.emails["operator"])
        [mail] = await reset_mails(session)
        token = link_token(settings, mail)
        weak = await set_new_password(client, token, "12345678")
        assert weak.status_code == 400
        assert "This password is too common." in weak.text
        differ = await set_new_password(client, token, NEW_PASSWORD, again="something else")
        assert differ.status_code == 400 and "The two passwords differ." in differ.text
        stored = await password_hash(session, people.user_ids["operator"])
        assert stored is not None and verify_password(stored, PASSWORD)
        # The link still works: nothing was set.
        assert (await set_new_password(client, token)).status_code == 303

    async def test_a_forged_link_counts_as_a_failed_authentication(
        self, app: FastAPI, settings: Settings, people: People
    ):
        limited = create_app(settings.model_copy(update={"auth_failure_limit": "2/minute"}))
        try:
            async with other_client(limited) as c:
                forged = f"{people.user_ids['operator']}-abc-{'A' * 43}"
                for _ in range(2):
                    r = await c.get("/portal/reset-password", params={"token": forged})
                    assert r.status_code == 400 and "not valid" in r.text
                r = await c.get("/portal/reset-password", params={"token": forged})
                assert r.status_code == 429
        finally:
            await app_state(limited).throttle.close()
            await app_state(limited).engine.dispose()

    async def test_the_reset_is_in_the_activity_log_as_the_user_s(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        from cloudadmin.db.models import ActivityLogEntry

        await ask_reset(client, people.emails["operator"])
        [mail] = await reset_mails(session)
        assert (await set_new_password(client, link_token(settings, mail))).status_code == 303
        session.expire_all()
        rows = (
            await session.execute(
                select(ActivityLogEntry).where(ActivityLogEntry.actions == "portal.reset_password")
            )
        ).scalars()
        [row] = list(rows)
        assert row.user_id == people.user_ids["operator"] and not row.reverted
        assert NEW_PASSWORD not in row.data
        await session.rollback()


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


class TestThePlatformMailServer:
    async def test_a_mail_no_reseller_sends_goes_through_the_platform_s_server(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
        smtp: tuple[Mailbox, int],
    ):
        mailbox, port = smtp
        await ask_reset(client, people.emails["operator"])
        await ask_reset(client, people.emails["reseller"])  # its reseller has none
        box = box_of(settings)
        outbound = Outbound.from_settings(settings)
        platform = PlatformMailServer(
            host="127.0.0.1",
            port=port,
            tls=False,
            login=None,
            password=None,
            sender="platform@cloudadmin.example",
        )
        for message in await reset_mails(session):
            await MailSender(box, outbound, platform).send(session, message)
        await session.rollback()
        assert sorted(m["to"][0] for m in mailbox.messages) == sorted(
            [people.emails["operator"], people.emails["reseller"]]
        )
        assert {m["from"] for m in mailbox.messages} == {"platform@cloudadmin.example"}
        assert all("/portal/reset-password?token=" in m["body"] for m in mailbox.messages)
        # Without the platform's server, such a mail cannot be sent (and says why).
        from cloudadmin.events.mail import MailError

        [first, *_] = await reset_mails(session)
        with pytest.raises(MailError, match="has no mail server"):
            await MailSender(box, outbound, None).send(session, first)
        await session.rollback()
