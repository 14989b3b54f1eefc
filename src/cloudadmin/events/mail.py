"""Notification e-mails: queued in the outbox, sent through the reseller's mail server,
else the platform's (``CLOUDADMIN_SMTP_*``: a mail of an operator's user, who has no
reseller, or of a reseller without a mail server)."""

from __future__ import annotations

import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import aiosmtplib
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.auth.service import notice_due
from cloudadmin.config import Settings
from cloudadmin.db.models import (
    Branding,
    Client,
    FailedLoginNotice,
    MailMessage,
    NotificationSetting,
    PortalFailedSignInNotice,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound, OutboundRefused
from cloudadmin.kit.timeparse import isoformat_z

log = logging.getLogger("cloudadmin.mail")

SMTP_TIMEOUT = 20.0

# One reason per kind of failure, never the server's or the network's own words (they
# could quote the password, and would tell closed ports from filtered ones).
COULD_NOT_CONNECT = "Could not connect to the mail server."
AUTHENTICATION_FAILED = "The mail server refused the login or password."
TLS_FAILED = "TLS with the mail server failed."
MESSAGE_REFUSED = "The mail server refused the message."


class MailError(Exception):
    """Sending failed; the text is one of the reasons above (or why the address is not
    allowed), safe to store and log."""


def reason(exc: BaseException) -> str:
    if isinstance(exc, OutboundRefused):
        return str(exc)
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return TLS_FAILED
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
        return AUTHENTICATION_FAILED
    if isinstance(
        exc,
        aiosmtplib.SMTPConnectError
        | aiosmtplib.SMTPTimeoutError
        | aiosmtplib.SMTPServerDisconnected
        | OSError,
    ):
        # A server that never greets reads like a closed port: open, closed and
        # filtered ports are not told apart.
        return COULD_NOT_CONNECT
    if isinstance(
        exc,
        aiosmtplib.SMTPRecipientsRefused | aiosmtplib.SMTPSenderRefused | aiosmtplib.SMTPDataError,
    ):
        return MESSAGE_REFUSED
    if isinstance(exc, aiosmtplib.SMTPException) and "TLS" in str(exc):
        return TLS_FAILED
    return COULD_NOT_CONNECT


# The outbox's ``reseller_id`` of a mail that no reseller sends (an operator's user's
# password reset): the platform's mail server sends it.
PLATFORM = 0


@dataclass(frozen=True, slots=True)
class PlatformMailServer:
    """The platform's own mail server (``CLOUDADMIN_SMTP_*``), used when the mail's
    reseller has none."""

    host: str
    port: int
    tls: bool
    login: str | None
    password: str | None
    sender: str | None

    @classmethod
    def from_settings(cls, settings: Settings) -> PlatformMailServer | None:
        if not settings.smtp_host:
            return None
        password = settings.smtp_password
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            tls=settings.smtp_tls,
            login=settings.smtp_login,
            password=password.get_secret_value() if password is not None else None,
            sender=settings.smtp_from,
        )


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
                .where(
                    NotificationSetting.reseller_id == reseller_id,
                    NotificationSetting.notification_type == kind,
                    NotificationSetting.enabled.is_(True),
                )
                .order_by(NotificationSetting.id)
            )
        ).scalars()
    )
    if not recipients:
        return None
    return await _queue(
        session,
        kind=kind,
        reseller_id=reseller_id,
        recipients=sorted(set(recipients)),
        subject=subject,
        body=body,
    )


async def _queue(session: AsyncSession, **mail: Any) -> MailMessage:
    """The outbox's row of one mail (its kind, reseller_id, recipients, subject and
    body), due now; the dispatcher is woken at commit."""
    now = utcnow()
    message = MailMessage(**mail, created_at=now, next_attempt_at=now, attempts=0, sent=False)
    session.add(message)
    await outbox_written(session)
    return message


async def enqueue_deletion_request(session: AsyncSession, account: Client, user_email: str) -> None:
    reseller_id = reseller_of(account)
    if reseller_id is None:
        return
    await enqueue(
        session,
        kind="deletion_request",
        reseller_id=reseller_id,
        subject=f"Account deletion requested: {account.company_name} ({account.id})",
        body=(
            f"Deletion of account {account.id} ({account.company_name}) was requested by "
            f"{user_email} at {isoformat_z(utcnow())}.\n"
        ),
    )


# A mail whose body holds a secret (a set-password link) is stored encrypted (SecretBox)
# and decrypted only to be sent: the outbox table never holds a usable link.
INVITATION = "invitation"
PASSWORD_RESET = "password_reset"
SEALED_KINDS = frozenset({INVITATION, PASSWORD_RESET})


async def enqueue_invitation(
    session: AsyncSession,
    box: SecretBox,
    *,
    reseller_id: int,
    recipient: str,
    company: str,
    brand: str | None,
    link: str,
    valid_hours: int,
) -> MailMessage:
    """Queues the invitation of a new user to an account: the link that sets the user's
    password, sent through the reseller's mail server (docs/iam.md, "Invitations")."""
    where = f"{company} on {brand}" if brand else company
    return await _queue(
        session,
        kind=INVITATION,
        reseller_id=reseller_id,
        recipients=[recipient],
        subject=f"You are invited to {where}",
        body=box.encrypt(
            f"You have been invited to the account {where}.\n\n"
            f"Set your password to sign in:\n{link}\n\n"
            f"The link works once, within {valid_hours} hours. If you did not expect this "
            "invitation, ignore this mail.\n"
        ),
    )


async def enqueue_password_reset(
    session: AsyncSession,
    box: SecretBox,
    *,
    reseller_id: int,
    recipient: str,
    link: str,
    valid_hours: int,
) -> MailMessage:
    """Queues a password reset's mail (the Admin Portal's "Forgot your password?"): the
    link that sets the user's password, sealed as an invitation's is. ``reseller_id``:
    the user's reseller, or PLATFORM."""
    return await _queue(
        session,
        kind=PASSWORD_RESET,
        reseller_id=reseller_id,
        recipients=[recipient],
        subject="Reset your password",
        body=box.encrypt(
            "Someone, probably you, asked to reset the password of this address.\n\n"
            f"Choose a new password here:\n{link}\n\n"
            f"The link works once, within {valid_hours} hours. If you did not ask for it, "
            "ignore this mail: your password stays as it is.\n"
        ),
    )


async def note_failed_login(
    sessions: async_sessionmaker[AsyncSession], *, key_id: int, account_id: int, source_ip: str
) -> None:
    """Queues a failed-login mail for the key's account, at most once per key per
    10 minutes (``note_failed_authentication``).

    The caller must hold no pooled connection (auth/request_caller.py lets go of the request's
    first): this opens one of its own. create_app hands it to authentication as
    ``AppState.note_failed_login`` (auth sits below events)."""

    async def account(session: AsyncSession) -> Client | None:
        return await session.get(Client, account_id)

    await note_failed_authentication(
        sessions,
        FailedLoginNotice,
        key_id,
        account,
        lambda account_id, when: (
            f"A request to the API with key {key_id} of account {account_id} was "
            f"refused at {when} (from {source_ip or 'unknown'}).\n"
        ),
    )


async def note_failed_authentication(
    sessions: async_sessionmaker[AsyncSession],
    notice: type[FailedLoginNotice] | type[PortalFailedSignInNotice],
    key: int,
    account_of: Callable[[AsyncSession], Awaitable[Client | None]],
    body: Callable[[int, str], str],
    *,
    log: logging.Logger = log,
    what: str = "failed-login notice",
) -> None:
    """Queues the ``failed_login`` mail of the account ``account_of`` finds (its
    reseller's addresses) for a refused authentication, at most once per ``key`` (an API
    key's id, a user's) per interval (``notice_due``). ``notice`` is the table that keeps
    when it was last sent, so that the limit holds across processes; ``body`` is the
    text, given the account's id and when the refusal was (ISO 8601); ``log`` and
    ``what`` name a failure.

    In a transaction and on a connection of its own: the refusal is answered whatever
    happens here, never turned into a 500."""
    now = utcnow()
    try:
        async with sessions() as session, session.begin():
            row: FailedLoginNotice | PortalFailedSignInNotice | None = await session.get(
                notice, key, with_for_update=True
            )
            if row is not None and not notice_due(row.last_sent_at, now):
                return
            account = await account_of(session)
            reseller_id = reseller_of(account) if account is not None else None
            if account is None or reseller_id is None:
                return
            if row is None:
                key_name = str(notice.__mapper__.primary_key[0].key)
                session.add(notice(**{key_name: key, "last_sent_at": now}))
            else:
                row.last_sent_at = now
            await enqueue(
                session,
                kind="failed_login",
                reseller_id=reseller_id,
                subject=f"Failed login to account {account.id}",
                body=body(account.id, isoformat_z(now)),
            )
    except IntegrityError:  # another process noted the same key at the same moment
        return
    except Exception:
        log.exception("could not queue the %s", what)


@dataclass
class MailSender:
    secret_box: SecretBox
    outbound: Outbound = field(default_factory=Outbound)
    # The platform's own server (CLOUDADMIN_SMTP_*), for a mail no reseller can send;
    # None: such a mail is not sent.
    platform: PlatformMailServer | None = None

    def _server_of(
        self, message: MailMessage, branding: Branding | None
    ) -> tuple[dict[str, Any], str | None, str | None]:
        """The mail server (host, port, tls, login), the password and the From address:
        the reseller's, else the platform's."""
        server = dict(branding.mail_server or {}) if branding else {}
        if server.get("host") and branding is not None:
            sender = (branding.public_settings or {}).get("fromEmail")
            password = (
                self.secret_box.decrypt(branding.mail_password_encrypted)
                if branding.mail_password_encrypted
                else None
            )
            return server, password, sender
        platform = self.platform
        if platform is None:
            if message.reseller_id == PLATFORM:
                raise MailError("the platform has no mail server (CLOUDADMIN_SMTP_HOST)")
            raise MailError(f"reseller {message.reseller_id} has no mail server")
        server = {
            "host": platform.host,
            "port": platform.port,
            "tls": platform.tls,
            "login": platform.login,
        }
        return server, platform.password, platform.sender

    async def send(self, session: AsyncSession, message: MailMessage) -> None:
        branding = (
            await session.get(Branding, message.reseller_id)
            if message.reseller_id != PLATFORM
            else None
        )
        server, password, sender = self._server_of(message, branding)
        mail = EmailMessage()
        mail["From"] = sender or server.get("login") or f"noreply@{server['host']}"
        mail["To"] = ", ".join(message.recipients)
        mail["Subject"] = message.subject
        sealed = message.kind in SEALED_KINDS
        mail.set_content(self.secret_box.decrypt(message.body) if sealed else message.body)
        port = int(server.get("port") or 25)
        tls = bool(server.get("tls"))
        try:
            # The socket is connected here, to an address Outbound checked; aiosmtplib
            # speaks SMTP over it (and verifies TLS against the host name).
            sock = await self.outbound.connect(server["host"], port)
        except (OutboundRefused, OSError) as exc:
            raise _failure(server["host"], port, exc) from exc
        client = aiosmtplib.SMTP(
            hostname=server["host"],
            sock=sock,
            username=server.get("login") or None,
            password=password or None,
            # tls: implicit TLS on 465, STARTTLS elsewhere; off: plain SMTP.
            use_tls=tls and port == 465,
            start_tls=tls and port != 465,
            timeout=SMTP_TIMEOUT,
        )
        try:
            # Up to the greeting (and TLS, login) within the connect timeout: a port that
            # never greets fails as fast as a closed one.
            await client.connect(timeout=self.outbound.timeout)
            await client.send_message(mail)
            with contextlib.suppress(aiosmtplib.SMTPException, OSError):
                await client.quit()
        except Exception as exc:
            raise _failure(server["host"], port, exc) from exc
        finally:
            client.close()
            sock.close()


def _failure(host: str, port: int, exc: BaseException) -> MailError:
    log.info("mail failure: %s", type(exc).__name__)
    if isinstance(exc, OutboundRefused):
        return MailError(str(exc))
    return MailError(f"{host}:{port}: {reason(exc)}"[:1000])
