"""POST /iam/clients/invite_user and POST /iam/auth/set-password (docs/iam.md,
"Invitations"): a user invited to an account gets a mail with a link that sets its
password once, within 24 hours."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor
from cloudadmin.db.models import GROUPS, Branding, Client
from cloudadmin.errors import NotFound, PermissionDenied, ValidationError
from cloudadmin.events import mail, user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.clients.service import NOT_FOUND
from cloudadmin.iam.users import repository
from cloudadmin.iam.users.schemas import GroupIn, InviteUser, SetPassword, UserInvited
from cloudadmin.iam.users.service import check_password
from cloudadmin.iam.users.set_password_token import VALID_FOR, SetPasswordTokens, parse
from cloudadmin.kit.crypto import SecretBox, hash_password
from cloudadmin.web.idempotency import KeyClaim

_BY_NAME = {name: gid for gid, name in GROUPS.items()}
# The link's page, under the control panel's address (the branding domain, else the
# configured public base URL): it takes the token and posts it with the new password.
SET_PASSWORD_PAGE = "/set-password?token="


class TokenRefused(ValidationError):
    """A set-password token that does not set a password (400 naming `token`): the
    endpoint counts it as a failed authentication of the client's address."""


def _group(given: GroupIn) -> int:
    if given.id is None and given.name is None:
        raise ValidationError.field("user_role", "Give the group's id or name.")
    group_id = given.id if given.id is not None else _BY_NAME.get(given.name or "")
    if group_id not in GROUPS or (given.name is not None and GROUPS[group_id] != given.name):
        raise ValidationError.field("user_role", f"Invalid role: {given.name or given.id}")
    assert group_id is not None
    return group_id


async def _mail_server_of(session: AsyncSession, account: Client) -> tuple[int, Branding]:
    """The reseller whose mail server sends the account's mails, and its branding; an
    account without one could never receive the invitation: 400 rather than a mail that
    waits for ever in the outbox."""
    reseller_id = mail.reseller_of(account)
    branding = await session.get(Branding, reseller_id) if reseller_id is not None else None
    if reseller_id is None or branding is None or branding.deleted:
        branding = None
    if branding is None or not (branding.mail_server or {}).get("host"):
        raise ValidationError.field(
            "client_id",
            "The account's reseller has no mail server to send the invitation through "
            "(branding privateSettings.mailServer).",
        )
    assert reseller_id is not None
    return reseller_id, branding


def link_base(branding: Branding, configured: str) -> str:
    """The reseller's control panel (its branding domain), else ``configured``."""
    return f"https://{branding.domain}" if branding.domain else configured.rstrip("/")


async def invite(
    session: AsyncSession,
    actor: Actor,
    body: InviteUser,
    idempotency: KeyClaim,
    *,
    tokens: SetPasswordTokens,
    box: SecretBox,
    base_url: str,
) -> UserInvited:
    caller = actor.caller
    account = await accounts.get_visible(session, caller, body.client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    if caller.is_member:
        raise PermissionDenied()
    group_id = _group(body.user_role)
    reseller_id, branding = await _mail_server_of(session, account)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    await accounts.lock_identities(session)
    user = await repository.by_email(session, body.email)
    if user is not None and (user.client_id != account.id or user.deleted):
        raise ValidationError.field("email", "This user cannot be added to this client.")
    if user is not None and (user.activated or user.password_hash is not None):
        raise ValidationError.field(
            "email", f"User {user.id} has already been invited to client {account.id}"
        )
    if user is None:
        group = await repository.get_group(session, group_id)
        assert group is not None  # the groups table is seeded by the initial migration
        user = await repository.add_user(
            session, account, group, email=body.email, password=None, name=body.name,
            lang=body.lang,
        )  # fmt: skip
        data = body.model_dump(mode="json", exclude_unset=True)
        await user_actions.record_change(
            session, actor, account, "create", Resource("user", user.id), data, api_group="user"
        )
    # else: invited before and not activated by a password yet (the link expired, or the
    # mail was lost): the same user gets a new link.
    await mail.enqueue_invitation(
        session,
        box,
        reseller_id=reseller_id,
        recipient=user.email,
        company=account.company_name,
        brand=(branding.public_settings or {}).get("brandName") or None,
        link=link_base(branding, base_url) + SET_PASSWORD_PAGE + tokens.make(user),
        valid_hours=int(VALID_FOR.total_seconds() // 3600),
    )
    return UserInvited(status="sent", user_id=user.id)


async def set_password(session: AsyncSession, tokens: SetPasswordTokens, body: SetPassword) -> None:
    """Sets the password of the user the token names, once: the new password voids the
    token. The user is then activated (the link proved the e-mail address)."""
    parsed = parse(body.token)
    user = await repository.for_new_password(session, parsed.user_id) if parsed else None
    refusal = tokens.check(parsed, user) if parsed and user else None
    if parsed is None or user is None or refusal is not None:
        message = refusal.value if refusal else "This link is not valid, or it was used already."
        raise TokenRefused.field("token", message)
    check_password(body.password, user.email)
    user.password_hash = hash_password(body.password)
    user.activated = True
    await session.flush()
