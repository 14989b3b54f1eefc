"""Sellers in the Admin Portal (docs/access.md, "The Admin Portal: sellers"): the
invitation that lets a seller set its password, its reset, Block and Activate, and the
link's password itself.

As the provider's manuals describe them (manage-sellers, block-activate-users-and-sellers):

- adding a seller mails it a link that sets its password, valid 24 hours and single use
  (the users' set-password token, of the seller kind); setting the password activates
  the seller; "Resend invite" is for a seller not activated yet, and mails a new link;
- "Reset password" mails an activated seller a new link; the old password keeps working
  until a new one is set;
- a blocked seller may neither sign in nor set a password through a link (nor be sent
  one) until it is activated again (unblocked); blocking ends its portal sessions;
- a deleted seller is gone for all of these (404), as for the API's operations.

Who may: the sellers' own callers (operators, the seller's reseller; sellers.service).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.db.models import Seller as SellerRow
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.events import mail, user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.sellers import repository, service
from cloudadmin.iam.sellers.repository import SellerFilter
from cloudadmin.iam.sellers.schemas import Seller, SellerWrite
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.users.invitations import TokenRefused
from cloudadmin.iam.users.service import check_password
from cloudadmin.iam.users.set_password_token import VALID_FOR, Refusal, SetPasswordTokens
from cloudadmin.kit.crypto import SecretBox, hash_password
from cloudadmin.kit.pagination import Paging
from cloudadmin.web.idempotency import KeyClaim

# The link's page, in the Admin Portal itself (portal/sections/seller_password.py).
SET_PASSWORD_PAGE = "/portal/set-password?token="
NO_MAIL_SERVER = (
    "The reseller has no mail server to send the invitation through "
    "(branding privateSettings.mailServer)."
)
BLOCKED = "The seller is blocked: activate it first."
ALREADY_ACTIVATED = "The seller has set its password already: reset the password instead."
NOT_ACTIVATED = "The seller has not set a password yet: resend the invitation instead."


@lru_cache(maxsize=4)
def seller_tokens(keys: tuple[str, ...]) -> SetPasswordTokens:
    """The sellers' set-password tokens under the secret keys (the current one first;
    links signed under a previous key work until they expire)."""
    return SetPasswordTokens.for_sellers(*keys)


async def _mail_link(
    session: AsyncSession,
    seller: SellerRow,
    reseller: Client,
    *,
    tokens: SetPasswordTokens,
    box: SecretBox,
    base_url: str,
    reset: bool = False,
) -> None:
    """Queues the mail with the seller's set-password link (the invitation's, or with
    ``reset`` the password reset's), through its reseller's mail server (400 when it has
    none, rather than a mail that waits for ever). Both are sealed in the outbox."""
    branding = await repository.mail_server_of(session, reseller.id)
    if branding is None:
        raise ValidationError(NO_MAIL_SERVER)
    link = base_url.rstrip("/") + SET_PASSWORD_PAGE + tokens.make(seller)
    hours = int(VALID_FOR.total_seconds() // 3600)
    if reset:
        await mail.enqueue_password_reset(
            session, box, reseller_id=reseller.id, recipient=seller.email, link=link,
            valid_hours=hours,
        )  # fmt: skip
    else:
        await mail.enqueue_invitation(
            session,
            box,
            reseller_id=reseller.id,
            recipient=seller.email,
            company=reseller.company_name,
            brand=(branding.public_settings or {}).get("brandName") or None,
            link=link,
            valid_hours=hours,
        )
    seller.invited_at = utcnow()
    await session.flush()


async def add(
    session: AsyncSession,
    actor: Actor,
    body: SellerWrite,
    idempotency: KeyClaim,
    *,
    tokens: SetPasswordTokens,
    box: SecretBox,
    base_url: str,
) -> Seller:
    """The API's creation (POST /iam/admin/sellers: its checks, its user action), then
    the invitation mail."""
    created = await service.create(session, actor, body, idempotency)
    seller, reseller = await service.visible_row(session, actor.caller, created.id)
    await _mail_link(session, seller, reseller, tokens=tokens, box=box, base_url=base_url)
    return service.out(seller, reseller)


async def send_link(
    session: AsyncSession,
    actor: Actor,
    seller_id: int,
    *,
    reset: bool,
    tokens: SetPasswordTokens,
    box: SecretBox,
    base_url: str,
) -> None:
    """A new set-password link for a seller that is not blocked: "Resend invite" for one
    not activated yet (the first link expired, or was lost), or with ``reset`` "Reset
    password" for an activated one, whose old password works until the new one is set.
    Each refuses the other's seller, saying which to use."""
    seller, reseller = await service.visible_row(session, actor.caller, seller_id, change=True)
    if seller.blocked:
        raise ValidationError(BLOCKED)
    if seller.activated != reset:
        raise ValidationError(NOT_ACTIVATED if reset else ALREADY_ACTIVATED)
    await _mail_link(
        session, seller, reseller, tokens=tokens, box=box, base_url=base_url, reset=reset
    )
    await user_actions.record_change(
        session,
        actor,
        reseller,
        "reset_password" if reset else "invite",
        Resource("seller", seller.id),
        {"email": seller.email},
    )


async def set_blocked(session: AsyncSession, actor: Actor, seller_id: int, blocked: bool) -> None:
    """Block (True) or Activate (False) a seller; blocking ends its portal sessions."""
    seller, reseller = await service.visible_row(session, actor.caller, seller_id, change=True)
    resource = Resource("seller", seller.id)
    changes = await user_actions.apply_and_record(
        session, actor, reseller, resource, seller, {"blocked": blocked}
    )
    if changes and blocked:
        await sessions.end_seller_sessions(session, seller.id)


async def delete_seller(session: AsyncSession, actor: Actor, seller_id: int) -> None:
    """The API's deletion (DELETE /iam/admin/sellers/{sellerId}); its portal sessions
    end too."""
    await service.delete(session, actor, seller_id)
    await sessions.end_seller_sessions(session, seller_id)


async def check_link(session: AsyncSession, tokens: SetPasswordTokens, token: str) -> str | None:
    """Why the link's token sets no password (its message), or None when it does."""
    parsed = tokens.parse(token)
    seller = await repository.for_new_password(session, parsed.user_id) if parsed else None
    refusal = tokens.check(parsed, seller) if parsed and seller else Refusal.invalid
    return refusal.value if refusal is not None else None


async def set_password(
    session: AsyncSession, tokens: SetPasswordTokens, token: str, password: str
) -> SellerRow:
    """Sets the password of the seller the token names, once (the new hash voids the
    token), and activates it (the link proved its address); its other sessions end.
    A refused token is a 400 naming ``token``; a weak password one naming ``password``
    (the users' rules)."""
    parsed = tokens.parse(token)
    seller = await repository.for_new_password(session, parsed.user_id) if parsed else None
    refusal = tokens.check(parsed, seller) if parsed and seller else Refusal.invalid
    if seller is None or refusal is not None:
        raise TokenRefused.field("token", (refusal or Refusal.invalid).value)
    check_password(password, seller.email)
    seller.password_hash = hash_password(password)
    seller.activated = True
    await session.flush()
    await sessions.end_seller_sessions(session, seller.id)
    return seller


@dataclass(frozen=True, slots=True)
class SellerView:
    """A seller as the Admin Portal lists it: the API's Seller, and what the portal adds
    (blocked, when the last link was mailed)."""

    seller: Seller
    reseller_id: int
    blocked: bool
    invited_at: datetime | None


async def portal_page(
    session: AsyncSession, caller: Caller, flt: SellerFilter, page: Paging
) -> tuple[int, list[SellerView]]:
    """The sellers the caller manages (operators: all; resellers: their own), by id,
    with the count: the API list's scope and filters."""
    require(caller, CallerKind.reseller)
    total = await repository.count_visible(session, caller, flt)
    rows = await repository.page_visible(session, caller, flt, [SellerRow.id], page)
    return total, [
        SellerView(service.out(row, reseller), reseller.id, row.blocked, row.invited_at)
        for row, reseller in rows
    ]
