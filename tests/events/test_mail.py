"""Notification e-mails through the reseller's mail server (real SMTP: aiosmtpd)."""

from __future__ import annotations

from datetime import timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding, FailedLoginNotice, MailMessage, NotificationSetting
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from tests.events.conftest import Mailbox
from tests.factories import Landscape, auth, make_key, make_user

URL = "/iam/activity_log/requests"


async def configure_mail(session: AsyncSession, app: FastAPI, ls: Landscape, port: int) -> None:
    reseller_id = ls.reseller_account.id
    session.add(
        Branding(
            reseller_id=reseller_id,
            domain="acme.example",
            public_settings={"fromEmail": "noreply@acme.example"},
            mail_server={"host": "127.0.0.1", "port": str(port), "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    for kind, email, enabled in [
        ("failed_login", "sec1@acme.example", True),
        ("failed_login", "sec2@acme.example", True),
        ("failed_login", "off@acme.example", False),
        ("deletion_request", "del@acme.example", True),
    ]:
        session.add(
            NotificationSetting(
                reseller_id=reseller_id, notification_type=kind, email=email, enabled=enabled
            )
        )
    await session.commit()


def wrong(token: str) -> dict[str, str]:
    return {"Authorization": f"apikey {token.split('_')[0]}_wrong-secret"}


async def send_all(dispatcher: Dispatcher) -> None:
    while await dispatcher.send_mail_once():
        pass


class TestFailedLogin:
    async def test_wrong_secret_mails_enabled_addresses(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        r = await client.get(URL, headers=wrong(ls.client_admin))
        assert r.status_code == 401
        await send_all(dispatcher)
        [mail] = mailbox.messages
        assert mail["to"] == ["sec1@acme.example", "sec2@acme.example"]
        assert mail["from"] == "noreply@acme.example"
        assert str(ls.client_account.id) in mail["subject"]

    async def test_at_most_one_mail_per_key_per_ten_minutes(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        for _ in range(4):
            await client.get(URL, headers=wrong(ls.client_admin))
        await client.get(URL, headers=wrong(ls.client_member))  # another key: its own mail
        await send_all(dispatcher)
        assert len(mailbox.messages) == 2
        # Ten minutes later the same key may cause a mail again.
        await session.execute(
            update(FailedLoginNotice).values(last_sent_at=utcnow() - timedelta(minutes=11))
        )
        await session.commit()
        await client.get(URL, headers=wrong(ls.client_admin))
        await send_all(dispatcher)
        assert len(mailbox.messages) == 3

    async def test_key_of_deleted_user_mails(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        token = await make_key(session, await make_user(session, ls.client_account, deleted=True))
        await session.commit()
        assert (await client.get(URL, headers=auth(token))).status_code == 401
        await send_all(dispatcher)
        assert len(mailbox.messages) == 1

    async def test_unknown_key_and_disabled_settings_send_nothing(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        await session.execute(update(NotificationSetting).values(enabled=False))
        await session.commit()
        await client.get(URL, headers={"Authorization": "apikey 999999_x"})
        await client.get(URL, headers=wrong(ls.client_admin))
        await send_all(dispatcher)
        assert mailbox.messages == []
        assert (await session.execute(select(MailMessage))).scalars().all() == []


class TestMailServerDown:
    async def test_mail_waits_and_is_sent_when_the_server_is_back(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, 1)  # nothing listens on port 1
        await client.get(URL, headers=wrong(ls.client_admin))
        await send_all(dispatcher)
        row = (await session.execute(select(MailMessage))).scalar_one()
        assert row.sent is False and row.attempts == 1 and "127.0.0.1:1" in row.last_error
        await session.execute(
            update(Branding).values(
                mail_server={"host": "127.0.0.1", "port": str(port), "tls": False}
            )
        )
        await session.execute(update(MailMessage).values(next_attempt_at=utcnow()))
        await session.commit()
        await send_all(dispatcher)
        assert len(mailbox.messages) == 1
        row = (
            await session.execute(select(MailMessage).execution_options(populate_existing=True))
        ).scalar_one()
        assert row.sent is True
