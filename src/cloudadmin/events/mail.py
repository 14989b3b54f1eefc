"""Notification e-mails: queued in the outbox, sent through the reseller's mail server."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from email.message import EmailMessage

import aiosmtplib
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.db.models import (
    Branding,
    Client,
    FailedLoginNotice,
    MailMessage,
    NotificationSetting,
)
from cloudadmin.db.types import utcnow
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.redact import MASK
from cloudadmin.kit.timeparse import isoformat_z

log = logging.getLogger("cloudadmin.mail")

FAILED_LOGIN_INTERVAL = timedelta(minutes=10)
SMTP_TIMEOUT = 20.0


class MailError(Exception):
    """Sending failed; the text is safe to store and log (no password)."""


def reseller_of(account: Client) -> int | None:
    """The reseller whose settings apply: a reseller account is its own."""
    return account.id if account.client_type == "reseller" else account.reseller_id


async def enqueue(
    session: AsyncSession, *, kind: str, reseller_id: int, subject: str, body: str
) -> MailMessage | None:
    """Queues one mail to every enabled address of ``kind``; None when there is none."""
    recipients = list(
        (
            await session.execute(
                select(NotificationSetting.email)
                .where(NotificationSetting.reseller_id == reseller_id,
                       NotificationSetting.notification_type == kind,
                       NotificationSetting.enabled.is_(True))
                .order_by(NotificationSetting.id)
            )
        ).scalars()
    )
    if not recipients:
        return None
    now = utcnow()
    message = MailMessage(
        kind=kind, reseller_id=reseller_id, recipients=sorted(set(recipients)),
        subject=subject, body=body, created_at=now, next_attempt_at=now, attempts=0,
        sent=False,
    )
    session.add(message)
    return message


async def enqueue_deletion_request(session: AsyncSession, account: Client, user_email: str) -> None:
    reseller_id = reseller_of(account)
    if reseller_id is None:
        return
    await enqueue(
        session, kind="deletion_request", reseller_id=reseller_id,
        subject=f"Account deletion requested: {account.company_name} ({account.id})",
        body=(f"Deletion of account {account.id} ({account.company_name}) was requested by "
              f"{user_email} at {isoformat_z(utcnow())}.\n"),
    )


def notice_due(last_sent_at: datetime | None, now: datetime) -> bool:
    """Whether a failed-login mail may be queued for a key last noticed then."""
    return last_sent_at is None or last_sent_at <= now - FAILED_LOGIN_INTERVAL


async def note_failed_login(
    sessions: async_sessionmaker[AsyncSession], *, key_id: int, account_id: int, source_ip: str
) -> None:
    """Queues a failed-login mail for the key's account, at most once per key per
    10 minutes (the limit is kept in the database, so it holds across processes).

    The caller must hold no pooled connection (auth/deps.py lets go of the request's
    first): this opens one of its own."""
    now = utcnow()
    try:
        async with sessions() as session, session.begin():
            notice = await session.get(FailedLoginNotice, key_id, with_for_update=True)
            if notice is not None and not notice_due(notice.last_sent_at, now):
                return
            account = await session.get(Client, account_id)
            reseller_id = reseller_of(account) if account is not None else None
            if reseller_id is None:
                return
            if notice is None:
                session.add(FailedLoginNotice(key_id=key_id, last_sent_at=now))
            else:
                notice.last_sent_at = now
            await enqueue(
                session, kind="failed_login", reseller_id=reseller_id,
                subject=f"Failed login to account {account_id}",
                body=(f"A request to the API with key {key_id} of account {account_id} was "
                      f"refused at {isoformat_z(now)} (from {source_ip or 'unknown'}).\n"),
            )
    except IntegrityError:  # another process noted the same key at the same moment
        return
    except Exception:  # a notice must never turn a 401 into a 500
        log.exception("could not queue the failed-login notice")


class MailSender:
    def __init__(self, secret_box: SecretBox) -> None:
        self.secret_box = secret_box

    async def send(self, session: AsyncSession, message: MailMessage) -> None:
        branding = await session.get(Branding, message.reseller_id)
        server = dict(branding.mail_server or {}) if branding else {}
        if not server.get("host"):
            raise MailError(f"reseller {message.reseller_id} has no mail server")
        sender = (branding.public_settings or {}).get("fromEmail") if branding else None
        password = (
            self.secret_box.decrypt(branding.mail_password_encrypted)
            if branding and branding.mail_password_encrypted else None
        )
        mail = EmailMessage()
        mail["From"] = sender or server.get("login") or f"noreply@{server['host']}"
        mail["To"] = ", ".join(message.recipients)
        mail["Subject"] = message.subject
        mail.set_content(message.body)
        port = int(server.get("port") or 25)
        tls = bool(server.get("tls"))
        try:
            await aiosmtplib.send(
                mail,
                hostname=server["host"],
                port=port,
                username=server.get("login") or None,
                password=password or None,
                # tls: implicit TLS on 465, STARTTLS elsewhere; off: plain SMTP.
                use_tls=tls and port == 465,
                start_tls=tls and port != 465,
                timeout=SMTP_TIMEOUT,
            )
        except Exception as exc:
            text = f"{server['host']}:{port}: {type(exc).__name__}: {exc}"
            if password:
                text = text.replace(password, MASK)
            raise MailError(text[:1000]) from exc
