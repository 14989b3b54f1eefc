"""Resolving a presented API key to a Caller."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.apikey import PresentedKey
from cloudadmin.auth.caller import Caller
from cloudadmin.db import driver
from cloudadmin.db.models import ApiKey, Client, FailedLoginNotice, User
from cloudadmin.db.models.accounts import ADMINISTRATORS, user_groups
from cloudadmin.db.types import utcnow
from cloudadmin.errors import TokenNotValid
from cloudadmin.kit.crypto import hash_api_secret, secret_matches

INVALID = "Given token not valid."

# An unknown key id is checked against this hash (of a secret nobody knows), so that it
# costs what a wrong secret costs and the answer's timing does not tell them apart.
_NO_KEY_HASH = hash_api_secret(0, secrets.token_urlsafe(32))

# A key's last_usage is written when the stored value is older than this: at most one
# write per key per interval, whatever the number of requests or service processes.
LAST_USAGE_INTERVAL = timedelta(minutes=1)

# At most one failed-login notice per key per interval (events/mail.py queues it).
FAILED_LOGIN_INTERVAL = timedelta(minutes=10)


class RefusedKnownKey(TokenNotValid):
    """A key that exists was refused (wrong secret, deleted user): worth a notice."""

    def __init__(self, key_id: int, account_id: int, noticed_at: datetime | None) -> None:
        super().__init__(INVALID)
        self.key_id = key_id
        self.account_id = account_id
        # When a failed-login notice was last queued for the key (events/mail.py).
        self.noticed_at = noticed_at


def notice_due(last_sent_at: datetime | None, now: datetime) -> bool:
    """Whether a failed-login notice may be queued for a key last noticed then."""
    return last_sent_at is None or last_sent_at <= now - FAILED_LOGIN_INTERVAL


# Built once: the key, its user, the user's account and group ids, and when a failed-
# login notice was last queued for it, in one round trip of plain rows (one per group;
# no ORM objects on the path of every request). The columns are unpacked by position
# in authenticate(). The key's last_usage comes along, so that noting a use costs a
# write only when the stored value is older than LAST_USAGE_INTERVAL.
_LOOKUP = driver.Static(
    select(
        ApiKey.id, ApiKey.secret_hash, ApiKey.revoked, ApiKey.expires_at,
        ApiKey.last_usage, ApiKey.role_id,
        User.id.label("user_id"), User.email, User.superuser, User.deleted, User.is_active,
        Client.id.label("account_id"), Client.client_type, Client.reseller_id,
        Client.deleted.label("account_deleted"),
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
    (
        key_id,
        secret_hash,
        revoked,
        expires_at,
        last_usage,
        role_id,
        user_id,
        email,
        superuser,
        deleted,
        is_active,
        account_id,
        client_type,
        reseller_id,
        account_deleted,
        noticed_at,
        _,
    ) = rows[0]
    if not secret_matches(key_id, presented.secret, secret_hash):
        raise RefusedKnownKey(key_id, account_id, noticed_at)
    now = utcnow()
    if revoked or (expires_at is not None and expires_at <= now):
        raise TokenNotValid(INVALID)
    if deleted:
        raise RefusedKnownKey(key_id, account_id, noticed_at)
    if not is_active or account_deleted:
        raise TokenNotValid(INVALID)
    if last_usage is None or last_usage < now - LAST_USAGE_INTERVAL:
        await _note_usage(conn, key_id, now)
    user_groups_ = frozenset(r[-1] for r in rows if r[-1] is not None)
    return Caller(
        user_id=user_id,
        user_email=email,
        # A token with a role below Administrators never carries operator rights.
        superuser=superuser and role_id in (None, ADMINISTRATORS),
        group_ids=token_groups(role_id, user_groups_),
        key_id=key_id,
        account_id=account_id,
        account_type=client_type,
        account_reseller_id=reseller_id,
        key_expires_at=expires_at,
    )


def token_groups(role_id: int | None, user_groups_: frozenset[int]) -> frozenset[int]:
    """The groups a key acts with: its role, as far as its user still holds it (an
    administrator holds every role); a key without a role (CLI, imports): its user's."""
    if role_id is None:
        return user_groups_
    if ADMINISTRATORS in user_groups_ or role_id in user_groups_:
        return frozenset((role_id,))
    return frozenset()


async def _note_usage(conn: AsyncConnection, key_id: int, now: datetime) -> None:
    """Writes the key's last_usage on the request's own connection (on a read, committed
    at once; on a change, with the request's transaction). The condition makes the
    concurrent requests of other processes that read the same old value write nothing."""
    await conn.execute(_TOUCH, {"key_id": key_id, "now": now, "cutoff": now - LAST_USAGE_INTERVAL})


# Through SQLAlchemy's execution (not the driver path): rare, and seen by its events.
# A key row another transaction holds (a change request that noted the same key's use a
# moment ago, a DELETE of the token) is skipped, not waited for: PostgreSQL's SKIP
# LOCKED (SQLite, one writer at a time, compiles no FOR UPDATE).
_TOUCH = (
    update(ApiKey)
    .where(
        ApiKey.id
        == select(ApiKey.id)
        .where(
            ApiKey.id == bindparam("key_id"),
            or_(ApiKey.last_usage.is_(None), ApiKey.last_usage < bindparam("cutoff")),
        )
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    .values(last_usage=bindparam("now"))
)
