"""Who signs in to the portal: an e-mail and a password checked against the stored
argon2id hash (kit/crypto.py, as the API's set-password flow stores it). A user, or a
seller (db/models/sellers.py: a reseller's sales person, not a user), whose password
was set through its invitation's link."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from enum import StrEnum, auto
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.db.models.accounts import Client, User, user_groups
from cloudadmin.db.models.sellers import Seller
from cloudadmin.iam.sign_in.session_row import SessionRow
from cloudadmin.kit.crypto import hash_password, verify_password


class PortalKind(StrEnum):
    operator = auto()
    reseller = auto()
    # A reseller's sales person (db/models/sellers.py): sees the clients assigned to it.
    seller = auto()
    # A client account's user: its console is not part of the Admin Portal.
    client = auto()

    @classmethod
    def of(cls, superuser: bool, reseller: bool) -> PortalKind:
        """A superuser is an operator, whatever its account; anyone else is what its
        account is (``reseller``: the account's type is reseller)."""
        if superuser:
            return cls.operator
        return cls.reseller if reseller else cls.client


@dataclass(frozen=True, slots=True)
class PortalUser:
    """Who is signed in. A seller is not a user: its ``user_id`` is 0 (no user has it)
    and ``seller_id`` names it."""

    user_id: int
    email: str
    name: str
    kind: PortalKind
    seller_id: int | None = None

    @property
    def principal(self) -> str:
        """Who this is, for what the portal keeps per person (preferences.py)."""
        if self.seller_id is not None:
            return f"seller:{self.seller_id}"
        return f"user:{self.user_id}"


_dummy_hash: str | None = None


def _dummy() -> str:
    """A hash to verify against when the e-mail names no one who may sign in, so that
    the answer takes as long as for a wrong password (made once, at the current cost)."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password(secrets.token_urlsafe(16))
    return _dummy_hash


def _portal_user(user: User, account: Client) -> PortalUser:
    kind = PortalKind.of(user.superuser, account.is_reseller)
    return PortalUser(user.id, user.email, user.name or user.email, kind)


async def user_of(db: AsyncSession, user_id: int) -> PortalUser | None:
    found = (
        await db.execute(
            select(User, Client)
            .join(Client, Client.id == User.client_id)
            .where(User.id == user_id, ~User.deleted, User.is_active, ~Client.deleted)
        )
    ).first()
    if found is None:
        return None
    user, account = found
    return _portal_user(user, account)


def _seller(seller: Seller) -> PortalUser:
    return PortalUser(0, seller.email, seller.full_name, PortalKind.seller, seller_id=seller.id)


def _seller_may_sign_in() -> list[Any]:
    """A seller who set its password (activated), neither blocked nor deleted, of a
    reseller account not deleted."""
    return [
        Seller.password_hash.is_not(None),
        Seller.activated.is_(True),
        Seller.blocked.is_(False),
        Seller.deleted.is_(False),
        Client.deleted.is_(False),
    ]


async def seller_of(db: AsyncSession, seller_id: int) -> PortalUser | None:
    found = (
        await db.execute(
            select(Seller)
            .join(Client, Client.id == Seller.reseller_id)
            .where(Seller.id == seller_id, *_seller_may_sign_in())
        )
    ).scalar_one_or_none()
    return None if found is None else _seller(found)


async def user_of_session(db: AsyncSession, row: SessionRow) -> PortalUser | None:
    """Who a live session signs in, if they still may sign in (a seller blocked or
    deleted meanwhile may not)."""
    if row.seller_id is not None:
        return await seller_of(db, row.seller_id)
    if row.user_id is None:
        return None
    return await user_of(db, row.user_id)


@dataclass(frozen=True, slots=True)
class Refused:
    """A refused sign-in; ``user_id``: the user the e-mail names, if any (its reseller
    is told of the failure)."""

    user_id: int | None


async def check_password(db: AsyncSession, email: str, password: str) -> PortalUser | Refused:
    """The user, or Refused for an unknown e-mail, a wrong password, and a user who may
    not sign in (inactive, deleted, its account deleted): all alike, in about the same
    time. The hash is verified in a thread: argon2id takes tens of milliseconds.

    When no user may sign in under the address, a seller may (activated, not blocked,
    not deleted): one hash is verified either way, so a seller's refusal looks and takes
    as long as a user's."""
    address = email.strip().lower()
    found = (
        await db.execute(
            select(User, Client)
            .join(Client, Client.id == User.client_id)
            .where(func.lower(User.email) == address)
        )
    ).first()
    user, account = found if found is not None else (None, None)
    allowed = (
        user is not None
        and account is not None
        and user.password_hash is not None
        and user.is_active
        and not user.deleted
        and not account.deleted
    )
    stored = user.password_hash if allowed and user is not None else None
    seller = None
    if stored is None:
        seller = (
            await db.execute(
                select(Seller)
                .join(Client, Client.id == Seller.reseller_id)
                .where(func.lower(Seller.email) == address, *_seller_may_sign_in())
            )
        ).scalar_one_or_none()
        stored = seller.password_hash if seller is not None else None
    verified = await asyncio.to_thread(verify_password, stored or _dummy(), password)
    if seller is not None:
        return _seller(seller) if verified else Refused(None)
    if not (verified and allowed and user is not None and account is not None):
        return Refused(user.id if user is not None and not user.deleted else None)
    return _portal_user(user, account)


async def caller_of(db: AsyncSession, user: PortalUser) -> Caller:
    """The signed-in user as the services know a caller (auth/caller.py): its account,
    its account's kind and its groups, as an API key without a role would carry them.
    A console's session has no key (``key_id`` None). A seller: its reseller's account,
    no group, ``seller_id`` set (auth/caller.py: it sees its clients, changes nothing)."""
    if user.seller_id is not None:
        reseller = (
            await db.execute(
                select(Client.id, Client.client_type, Client.reseller_id)
                .join(Seller, Seller.reseller_id == Client.id)
                .where(Seller.id == user.seller_id)
            )
        ).one()
        return Caller(
            user_id=0,
            user_email=user.email,
            superuser=False,
            group_ids=frozenset(),
            key_id=None,
            account_id=reseller[0],
            account_type=reseller[1],
            account_reseller_id=reseller[2],
            seller_id=user.seller_id,
        )
    found = (
        await db.execute(
            select(Client.id, Client.client_type, Client.reseller_id, user_groups.c.group_id)
            .select_from(User)
            .join(Client, Client.id == User.client_id)
            .outerjoin(user_groups, user_groups.c.user_id == User.id)
            .where(User.id == user.user_id)
        )
    ).all()
    account_id, account_type, reseller_id, _ = found[0]
    superuser = user.kind is PortalKind.operator
    return Caller(
        user_id=user.user_id,
        user_email=user.email,
        superuser=superuser,
        group_ids=frozenset(row[3] for row in found if row[3] is not None),
        key_id=None,
        account_id=account_id,
        account_type=account_type,
        account_reseller_id=reseller_id,
    )
