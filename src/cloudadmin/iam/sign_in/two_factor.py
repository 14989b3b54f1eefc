"""Two-factor sign-in with TOTP (RFC 6238; docs/portal.md, "Signing in" and "Profile").

A user enrols from the profile page: a new secret is stored encrypted (SecretBox) but
not yet in force; the first right code confirms it and turns ``users.two_fa`` on. From
then on a sign-in asks for a code after the password, before a session starts: the
password's check hands out a *pending sign-in*, a signed ticket naming the user (valid
a few minutes, bound to the user's password hash, so a password change voids it) that
the code's form posts back with the code.

A code is accepted for the current 30-second step or one either side (clocks drift),
and once: the step of the last accepted code is kept, and a code of that step or an
earlier one is refused (its row is locked while checked, so two requests with one code
cannot both pass). Services flush; the request's transaction commits.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyotp
import segno
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.db.models import User
from cloudadmin.db.models.two_factor import UserTwoFactor
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.iam.sign_in.credentials import PortalKind, PortalUser, user_of
from cloudadmin.kit.crypto import SecretBox

ISSUER = "cloudadmin Admin Portal"
# Steps either side of the current one whose code is accepted (30 s each).
WINDOW = 1
# Wrong codes in a row at the sign-in after which no code passes for HOLD: whoever
# guesses knows the password, and may come from more addresses than the failure
# throttle (counted per address) can slow down.
MAX_WRONG_CODES = 10
HOLD = timedelta(minutes=15)
_CODE = re.compile(r"\d{6}")


def new_secret() -> str:
    """160 random bits in base32 (RFC 4226's recommended length)."""
    return pyotp.random_base32()


def provisioning_uri(secret: str, email: str) -> str:
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def qr_svg(uri: str) -> str:
    """The ``otpauth://`` URI as a QR code, an inline SVG (no style attribute: the
    portal's Content-Security-Policy allows none) with its text alternative."""
    code = segno.make(uri, error="m")
    svg: str = code.svg_inline(
        scale=5, title="QR code of the authenticator's secret", svgclass="qr", lineclass=None
    )
    return svg.replace("<svg ", '<svg role="img" ', 1)


def secret_groups(secret: str) -> str:
    """The secret as one types it: groups of four characters."""
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


def _normalised(code: str) -> str:
    return re.sub(r"[\s-]", "", code)


def matching_step(secret: str, code: str, now: datetime | None = None) -> int | None:
    """The time step whose code ``code`` is (the current one or one either side)."""
    code = _normalised(code)
    if not _CODE.fullmatch(code):
        return None
    totp = pyotp.TOTP(secret)
    current = totp.timecode(now or utcnow())
    found = None
    for step in range(current - WINDOW, current + WINDOW + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            found = step
    return found


async def _user(db: AsyncSession, user_id: int) -> User:
    user = await db.get(User, user_id)
    assert user is not None  # a signed-in user
    return user


async def required(db: AsyncSession, user: PortalUser) -> bool:
    """Whether the user must give a code after the password (``users.two_fa``). Sellers
    are not users and sign in with their password alone."""
    if user.kind is PortalKind.seller:
        return False
    found = await db.get(User, user.user_id)
    return found is not None and found.two_fa


async def is_on(db: AsyncSession, user_id: int) -> bool:
    return (await _user(db, user_id)).two_fa


async def start_enrolment(db: AsyncSession, box: SecretBox, user_id: int) -> str:
    """A new secret for the user, stored encrypted but not in force until a code
    confirms it (``confirm_enrolment``); an earlier unconfirmed one is replaced."""
    if await is_on(db, user_id):
        raise ValidationError("Two-factor sign-in is on already; turn it off first.")
    secret = new_secret()
    row = await db.get(UserTwoFactor, user_id, with_for_update=True)
    if row is None:
        db.add(UserTwoFactor(user_id=user_id, secret_encrypted=box.encrypt(secret)))
    else:
        row.secret_encrypted = box.encrypt(secret)
        row.created_at = utcnow()
        row.confirmed_at = None
        row.last_step = None
    await db.flush()
    return secret


async def pending_secret(db: AsyncSession, box: SecretBox, user_id: int) -> str | None:
    """The secret of an enrolment not confirmed yet (shown again until it is); a
    confirmed secret is never shown again."""
    row = await db.get(UserTwoFactor, user_id)
    if row is None or row.confirmed_at is not None:
        return None
    return box.decrypt(row.secret_encrypted)


async def confirm_enrolment(db: AsyncSession, box: SecretBox, user_id: int, code: str) -> bool:
    """Turns two-factor sign-in on when ``code`` is right for the pending secret."""
    row = await db.get(UserTwoFactor, user_id, with_for_update=True)
    if row is None or row.confirmed_at is not None:
        return False
    step = matching_step(box.decrypt(row.secret_encrypted), code)
    if step is None:
        return False
    row.confirmed_at = utcnow()
    row.last_step = step
    (await _user(db, user_id)).two_fa = True
    await db.flush()
    return True


def held(row: UserTwoFactor, now: datetime) -> bool:
    """Past MAX_WRONG_CODES wrong codes in a row, within HOLD of the last one."""
    return (
        row.failed_codes >= MAX_WRONG_CODES
        and row.last_failed_at is not None
        and now - row.last_failed_at < HOLD
    )


async def check_code(db: AsyncSession, box: SecretBox, user_id: int, code: str) -> bool:
    """Whether ``code`` is the user's current code, not used before; used now (and the
    wrong codes in a row start again from none). A user whose ``two_fa`` is on without
    a secret enrolled here (an imported user) has no code that passes, nor does a user
    whose codes are held (``note_wrong_code``)."""
    row = await db.get(UserTwoFactor, user_id, with_for_update=True)
    if row is None or row.confirmed_at is None or held(row, utcnow()):
        return False
    step = matching_step(box.decrypt(row.secret_encrypted), code)
    if step is None or (row.last_step is not None and step <= row.last_step):
        return False
    row.last_step = step
    row.failed_codes = 0
    row.last_failed_at = None
    await db.flush()
    return True


async def note_wrong_code(sessions: async_sessionmaker[AsyncSession], user_id: int) -> None:
    """Counts a wrong code at the sign-in, in a transaction of its own (the refused
    request's is rolled back); a count older than HOLD starts again from one."""
    now = utcnow()
    async with sessions() as db, db.begin():
        row = await db.get(UserTwoFactor, user_id, with_for_update=True)
        if row is None:
            return
        stale = row.last_failed_at is None or now - row.last_failed_at >= HOLD
        row.failed_codes = 1 if stale else row.failed_codes + 1
        row.last_failed_at = now


async def turn_off(db: AsyncSession, user_id: int) -> None:
    """The secret is deleted and ``two_fa`` turned off."""
    row = await db.get(UserTwoFactor, user_id)
    if row is not None:
        await db.delete(row)
    (await _user(db, user_id)).two_fa = False
    await db.flush()


# --- the pending sign-in: between the password and the code --------------------------

_PURPOSE = b"cloudadmin-portal-two-factor-v1:"
_TICKET = re.compile(r"(\d{1,10})\.(\d{1,12})\.([A-Za-z0-9_-]{43})")


@dataclass(frozen=True, slots=True)
class PendingSignIns:
    """Makes and checks the tickets of pending sign-ins under the secret key (and the
    previous ones, as the set-password links): ``<user id>.<issued>.<signature>``, an
    HMAC-SHA256 of the user's id, password hash and the issue time."""

    keys: tuple[bytes, ...]
    valid_for: timedelta

    @classmethod
    def of(cls, secret_keys: list[str], minutes: float) -> PendingSignIns:
        keys = tuple(hashlib.sha256(_PURPOSE + k.encode()).digest() for k in secret_keys)
        return cls(keys, timedelta(minutes=minutes))

    def make(self, user_id: int, password_hash: str, now: datetime | None = None) -> str:
        issued = int((now or utcnow()).timestamp())
        return f"{user_id}.{issued}.{self._sign(self.keys[0], user_id, password_hash, issued)}"

    async def user_of(
        self, db: AsyncSession, ticket: str, now: datetime | None = None
    ) -> PortalUser | None:
        """The user a live ticket names, if it still may sign in; None otherwise."""
        match = _TICKET.fullmatch(ticket or "")
        if match is None:
            return None
        user_id, issued = int(match[1]), int(match[2])
        user = await db.get(User, user_id)
        if user is None or user.password_hash is None:
            return None
        if not any(
            hmac.compare_digest(match[3], self._sign(key, user_id, user.password_hash, issued))
            for key in self.keys
        ):
            return None
        age = (now or utcnow()) - datetime.fromtimestamp(issued, UTC)
        if age > self.valid_for or age < -timedelta(minutes=1):
            return None
        return await user_of(db, user_id)

    @staticmethod
    def _sign(key: bytes, user_id: int, password_hash: str, issued: int) -> str:
        state = f"{user_id}\0{password_hash}\0{issued}".encode()
        digest = hmac.new(key, state, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def pending_ticket(db: AsyncSession, tickets: PendingSignIns, user: PortalUser) -> str:
    """A ticket for ``user``, who has just given the right password."""
    found = await _user(db, user.user_id)
    return tickets.make(user.user_id, found.password_hash or "")
