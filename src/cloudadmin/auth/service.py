"""Resolving a presented API key to a Caller."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.apikey import PresentedKey
from cloudadmin.auth.caller import Caller
from cloudadmin.db import driver
from cloudadmin.db.models import ApiKey, Client, FailedLoginNotice, User
from cloudadmin.db.models.accounts import user_groups
from cloudadmin.db.types import utcnow
from cloudadmin.errors import TokenNotValid
from cloudadmin.kit.crypto import hash_api_secret, secret_matches

INVALID = "Given token not valid."

# An unknown key id is checked against this hash (of a secret nobody knows), so that it
# costs what a wrong secret costs and the answer's timing does not tell them apart.
_NO_KEY_HASH = hash_api_secret(0, secrets.token_urlsafe(32))


class RefusedKnownKey(TokenNotValid):
    """A key that exists was refused (wrong secret, deleted user): worth a notice."""

    def __init__(self, key_id: int, account_id: int, noticed_at: datetime | None) -> None:
        super().__init__(INVALID)
        self.key_id = key_id
        self.account_id = account_id
        # When a failed-login notice was last queued for the key (events/mail.py).
        self.noticed_at = noticed_at


# Built once: the key, its user, the user's account and group ids, and when a failed-
# login notice was last queued for it, in one round trip of plain rows (one per group;
# no ORM objects on the path of every request). The columns are unpacked by position
# in authenticate().
_LOOKUP = driver.Static(
    select(
        ApiKey.id, ApiKey.secret_hash, ApiKey.revoked, ApiKey.expires_at,
        User.id.label("user_id"), User.email, User.superuser, User.deleted,
        User.is_active, Client.id.label("account_id"), Client.client_type,
        Client.reseller_id, Client.company_name, Client.deleted.label("account_deleted"),
        FailedLoginNotice.last_sent_at, user_groups.c.group_id,
    )
    .join(User, User.id == ApiKey.user_id)
    .join(Client, Client.id == User.client_id)
    .outerjoin(FailedLoginNotice, FailedLoginNotice.key_id == ApiKey.id)
    .outerjoin(user_groups, user_groups.c.user_id == User.id)
    .where(ApiKey.id == bindparam("key_id"))
)  # fmt: skip


async def authenticate(conn: AsyncConnection, presented: PresentedKey) -> Caller:
    """Look the key up by id, then compare a hash of its secret in constant time."""
    rows = await driver.fetch(conn, _LOOKUP, {"key_id": presented.key_id})
    if not rows:
        secret_matches(presented.key_id, presented.secret, _NO_KEY_HASH)
        raise TokenNotValid(INVALID)
    (key_id, secret_hash, revoked, expires_at, user_id, email, superuser, deleted, is_active,
     account_id, client_type, reseller_id, company_name, account_deleted, noticed_at,
     _) = rows[0]
    if not secret_matches(key_id, presented.secret, secret_hash):
        raise RefusedKnownKey(key_id, account_id, noticed_at)
    if revoked or (expires_at is not None and expires_at <= utcnow()):
        raise TokenNotValid(INVALID)
    if deleted:
        raise RefusedKnownKey(key_id, account_id, noticed_at)
    if not is_active or account_deleted:
        raise TokenNotValid(INVALID)
    return Caller(
        user_id=user_id,
        user_email=email,
        superuser=superuser,
        group_ids=frozenset(r[-1] for r in rows if r[-1] is not None),
        key_id=key_id,
        account_id=account_id,
        account_type=client_type,
        account_reseller_id=reseller_id,
        account_company_name=company_name,
    )
