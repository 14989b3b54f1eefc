"""Password reset by an e-mail link (docs/portal.md, "Signing in"): "Forgot your
password?" mails a set-password link (iam/users/set_password_token.py: valid 24 hours,
single use, as it is bound to the password hash) through the user's reseller's mail
server, else the platform's; the link's page sets the password through the API's own
set-password service, and every session of the user ends.

An address that names no one who may sign in gets the same answer and no mail; the
page counts every request in the failed-authentication throttle, known address or not,
so that the throttle tells nothing either.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding, Client
from cloudadmin.events import mail
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.sign_in.credentials import user_of
from cloudadmin.iam.users import repository as users
from cloudadmin.iam.users.invitations import set_password
from cloudadmin.iam.users.schemas import SetPassword
from cloudadmin.iam.users.set_password_token import (
    VALID_FOR,
    Refusal,
    SetPasswordTokens,
    parse,
)
from cloudadmin.kit.crypto import SecretBox

log = logging.getLogger("cloudadmin.portal")


async def _mail_server_owner(
    db: AsyncSession, account: Client, platform_has_server: bool
) -> int | None:
    """The reseller_id of the outbox row: the user's reseller when its branding has a
    mail server, else the platform (mail.PLATFORM, or the reseller's row, which the
    sender sends through the platform's server); None when nobody can send it."""
    reseller_id = mail.reseller_of(account)
    branding = await db.get(Branding, reseller_id) if reseller_id is not None else None
    if branding is not None and not branding.deleted and (branding.mail_server or {}).get("host"):
        return reseller_id
    if platform_has_server:
        return reseller_id if reseller_id is not None else mail.PLATFORM
    return None


async def request_reset(
    db: AsyncSession,
    box: SecretBox,
    tokens: SetPasswordTokens,
    *,
    email: str,
    link_prefix: str,
    platform_has_server: bool,
) -> bool:
    """Queues the reset mail of the user ``email`` names, if that user may sign in;
    whether a mail was queued (the page answers alike either way). ``link_prefix``: the
    link's address up to the token."""
    user = await users.by_email(db, email.strip())
    if user is None or await user_of(db, user.id) is None:
        return False
    account = await db.get(Client, user.client_id)
    assert account is not None  # user_of found the account
    owner = await _mail_server_owner(db, account, platform_has_server)
    if owner is None:
        log.warning(
            "password reset of user %s not sent: neither its reseller nor the platform "
            "(CLOUDADMIN_SMTP_HOST) has a mail server",
            user.id,
        )
        return False
    await mail.enqueue_password_reset(
        db,
        box,
        reseller_id=owner,
        recipient=user.email,
        link=link_prefix + tokens.make(user),
        valid_hours=int(VALID_FOR.total_seconds() // 3600),
    )
    return True


async def complete_reset(db: AsyncSession, tokens: SetPasswordTokens, body: SetPassword) -> int:
    """Sets the password the token allows (the API's set-password service: its rules,
    its refusals, TokenRefused for the token) and ends every session of the user; the
    user's id."""
    await set_password(db, tokens, body)
    parsed = parse(body.token)
    assert parsed is not None  # set_password accepted it
    await sessions.end_other_sessions(db, parsed.user_id, None)
    return parsed.user_id


async def link_refusal(db: AsyncSession, tokens: SetPasswordTokens, token: str) -> Refusal | None:
    """Why a reset link would not set a password now (the page says so before the new
    password is typed); None when it would. Nothing is written."""
    parsed = parse(token)
    user = await users.for_new_password(db, parsed.user_id) if parsed else None
    if parsed is None or user is None:
        return Refusal.invalid
    return tokens.check(parsed, user)
