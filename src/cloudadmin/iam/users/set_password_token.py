"""The token of a set-password link: stateless, single use, valid 24 hours.

Nothing is stored. The token is ``<user id>-<issue time>-<signature>``: the issue time in
base 36 (seconds since the epoch), the signature an HMAC-SHA256, under a key derived from
the secret key, of the user's id, e-mail and current password hash and of the issue time
(as Django's PasswordResetTokenGenerator). Setting a password changes the hash (argon2id
salts each one), so a used token no longer matches: single use without a table. A changed
e-mail, or another password set meanwhile, voids it too.

Invitations (iam/users/invitations.py) make one; the Admin Portal's password reset can
use the same generator with the same consuming endpoint. A seller's link (the Admin
Portal's sellers, iam/sellers/invitation.py) is made by a generator of the seller kind
(``SetPasswordTokens.for_sellers``): another purpose in its key and an ``s`` before the
id, so that neither kind's token is ever taken for the other's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Protocol

from cloudadmin.db.types import utcnow

VALID_FOR = timedelta(hours=24)
# A token issued this far in the future (clock steps between processes) still counts.
_CLOCK_SKEW = timedelta(minutes=5)
_PURPOSE = b"cloudadmin-set-password-v1:"
_SELLER_PURPOSE = b"cloudadmin-seller-set-password-v1:"
SELLER_PREFIX = "s"


class Holder(Protocol):
    """Whose password a token sets: a user or a seller row."""

    @property
    def id(self) -> int: ...
    @property
    def email(self) -> str: ...
    @property
    def password_hash(self) -> str | None: ...


_SHAPE = re.compile(r"(\d{1,10})-([0-9a-z]{1,13})-([A-Za-z0-9_-]{43})")


class Refusal(Enum):
    """Why a token does not set a password; the message names no secret."""

    invalid = "This link is not valid, or it was used already."
    expired = "This link has expired; ask for a new invitation."


@dataclass(frozen=True, slots=True)
class Parsed:
    user_id: int
    issued: int  # seconds since the epoch
    signature: str


def parse(token: str) -> Parsed | None:
    """The parts of a well-formed token (nothing is checked yet), or None."""
    match = _SHAPE.fullmatch(token)
    if match is None:
        return None
    return Parsed(int(match[1]), int(match[2], 36), match[3])


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


class SetPasswordTokens:
    """Makes tokens under the current secret key; checks them under it and the previous
    ones (a rotated key does not void the links already sent)."""

    def __init__(
        self, secret_key: str, *previous: str, purpose: bytes = _PURPOSE, prefix: str = ""
    ) -> None:
        self._keys = [
            hashlib.sha256(purpose + k.encode()).digest() for k in (secret_key, *previous)
        ]
        self._prefix = prefix

    @classmethod
    def for_sellers(cls, secret_key: str, *previous: str) -> SetPasswordTokens:
        return cls(secret_key, *previous, purpose=_SELLER_PURPOSE, prefix=SELLER_PREFIX)

    def parse(self, token: str) -> Parsed | None:
        """:func:`parse` for this generator's kind (its prefix before the id)."""
        if not token.startswith(self._prefix):
            return None
        return parse(token[len(self._prefix) :])

    def make(self, user: Holder, *, now: datetime | None = None) -> str:
        issued = int((now or utcnow()).timestamp())
        signature = self._sign(self._keys[0], user, issued)
        return f"{self._prefix}{user.id}-{_base36(issued)}-{signature}"

    def check(self, token: Parsed, user: Holder, *, now: datetime | None = None) -> Refusal | None:
        """None when ``token`` (made for ``user``, whose row it names) sets its password
        now; else why not. The signature is checked before the time, so an expired link
        is told apart only from a genuine one."""
        if token.user_id != user.id or not any(
            hmac.compare_digest(token.signature, self._sign(key, user, token.issued))
            for key in self._keys
        ):
            return Refusal.invalid
        issued = datetime.fromtimestamp(token.issued, UTC)
        now = now or utcnow()
        if issued > now + _CLOCK_SKEW:
            return Refusal.invalid
        if now - issued > VALID_FOR:
            return Refusal.expired
        return None

    @staticmethod
    def _sign(key: bytes, user: Holder, issued: int) -> str:
        state = "\0".join((str(user.id), user.email.lower(), user.password_hash or "", str(issued)))
        digest = hmac.new(key, state.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
