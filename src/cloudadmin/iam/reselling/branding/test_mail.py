"""A test mail through a reseller's saved mail server (the Admin Portal's "Send a test
mail", docs/portal.md, "Vendor settings").

It is sent at once, not through the outbox, by the same code that sends the outbox's
mails (``events/mail.py``, ``MailSender``): the same connection under the outbound
policy (``kit/outbound.py``), the same TLS and login. A failure is told by its class
only (``events.mail.reason``): never the server's or the network's own words.

The mail server is read on a session of its own, without a transaction (the read
sessionmaker): the SMTP conversation may take the outbound timeout, and no database
lock may be held while it runs (on SQLite a change's transaction holds the write lock).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.auth.caller import Caller
from cloudadmin.db.models import MailMessage
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.events.mail import MailError, MailSender, reason
from cloudadmin.iam.reselling.branding import repository
from cloudadmin.iam.reselling.branding.service import own_reseller
from cloudadmin.kit.outbound import OutboundRefused

KIND = "test"
SUBJECT = "Test mail"
NOT_ALLOWED = "The outbound policy of this service does not allow the address of the mail server."
NO_MAIL_SERVER = "No mail server is saved: save its settings first."


@dataclass(frozen=True, slots=True)
class TestMailResult:
    """Whether the mail was accepted by the server; if not, the failure's class."""

    sent: bool
    recipient: str
    failure: str | None = None


def failure_class(error: MailError) -> str:
    """The class of a sending failure, in words safe to show: its cause's kind
    (could not connect, login refused, TLS failed, message refused, not allowed)."""
    cause = error.__cause__
    if isinstance(cause, OutboundRefused):
        return NOT_ALLOWED
    if cause is None:
        return NO_MAIL_SERVER
    return reason(cause)


async def send_test_mail(
    sessions: async_sessionmaker[AsyncSession],
    caller: Caller,
    sender: MailSender,
    recipient: str,
) -> TestMailResult:
    """Sends a short mail to ``recipient`` through the caller's reseller's saved mail
    server. Only a reseller (or an operator whose home account is one) may: 403
    otherwise; no saved mail server is a 400. ``sessions``: a sessionmaker without
    transactions (the application's read sessionmaker)."""
    async with sessions() as session:
        reseller = await own_reseller(session, caller)
        branding = await repository.get(session, reseller.id)
        if branding is None or not (branding.mail_server or {}).get("host"):
            raise ValidationError(message=NO_MAIL_SERVER)
        brand = (branding.public_settings or {}).get("brandName") or reseller.company_name
        now = utcnow()
        # Never added to the session: the outbox does not keep it.
        message = MailMessage(
            kind=KIND,
            reseller_id=reseller.id,
            recipients=[recipient],
            subject=f"{SUBJECT} from {brand}"[:255],
            body=(
                f"This is a test mail sent through the mail server of {brand} "
                f"at {now.isoformat(timespec='seconds')}.\n"
                "If you can read it, your customers' notification mails will arrive too.\n"
            ),
            created_at=now,
            next_attempt_at=now,
            attempts=0,
            sent=False,
        )
        try:
            await sender.send(session, message)
        except MailError as error:
            return TestMailResult(sent=False, recipient=recipient, failure=failure_class(error))
    return TestMailResult(sent=True, recipient=recipient)
