"""Resolving a presented API key to a Caller."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload

from cloudadmin.auth.apikey import PresentedKey
from cloudadmin.auth.caller import Caller
from cloudadmin.db.models import ApiKey, Client, User
from cloudadmin.db.types import utcnow
from cloudadmin.errors import TokenNotValid
from cloudadmin.kit.crypto import secret_matches

INVALID = "Given token not valid."


class RefusedKnownKey(TokenNotValid):
    """A key that exists was refused (wrong secret, deleted user): worth a notice."""

    def __init__(self, key_id: int, account_id: int) -> None:
        super().__init__(INVALID)
        self.key_id = key_id
        self.account_id = account_id


async def authenticate(session: AsyncSession, presented: PresentedKey) -> Caller:
    """Look the key up by id, then compare a hash of its secret in constant time."""
    row = (
        await session.execute(
            select(ApiKey, User, Client)
            .join(User, User.id == ApiKey.user_id)
            .join(Client, Client.id == User.client_id)
            .where(ApiKey.id == presented.key_id)
            # One round trip per request: the groups come in the same query.
            .options(joinedload(User.groups))
        )
    ).unique().first()
    if row is None:
        raise TokenNotValid(INVALID)
    key, user, account = row
    if not secret_matches(key.id, presented.secret, key.secret_hash):
        raise RefusedKnownKey(key.id, account.id)
    if key.revoked or (key.expires_at is not None and key.expires_at <= utcnow()):
        raise TokenNotValid(INVALID)
    if user.deleted:
        raise RefusedKnownKey(key.id, account.id)
    if not user.is_active or account.deleted:
        raise TokenNotValid(INVALID)
    return Caller(
        user_id=user.id,
        user_email=user.email,
        superuser=user.superuser,
        group_ids=frozenset(user.group_ids),
        key_id=key.id,
        account_id=account.id,
        account_type=account.client_type,
        account_reseller_id=account.reseller_id,
        account_company_name=account.company_name,
    )
