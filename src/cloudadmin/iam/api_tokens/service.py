"""/iam/clients/{clientId}/tokens: who may list, read, issue and delete API tokens
(docs/access.md, "API tokens"; docs/iam.md, "API tokens")."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import GROUPS, ApiKey, User
from cloudadmin.db.models.accounts import ADMINISTRATORS
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound, PermissionDenied, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.api_tokens import repository
from cloudadmin.iam.api_tokens.repository import TokenFilter
from cloudadmin.iam.api_tokens.schemas import (
    ApiToken,
    ApiTokenCreated,
    Role,
    RoleIn,
    TokenCreate,
    TokenIssuer,
)
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.clients.service import NOT_FOUND
from cloudadmin.kit.crypto import hash_api_secret, new_api_secret
from cloudadmin.kit.timeparse import isoformat_z
from cloudadmin.web.idempotency import KeyClaim

TOKEN_NOT_FOUND = "API token not found."
ROLE_FIELD = "client_user.role"
# The role a token takes by default: the issuer's highest (first held in this order).
_DEFAULT_ORDER = (ADMINISTRATORS, 5, 2, 3009, 3022)
_BY_NAME = {name: gid for gid, name in GROUPS.items()}


def is_administrator(caller: Caller) -> bool:
    """Acting with the Administrators role (or as an operator): manages every token of
    the account and may give a token any role."""
    return caller.superuser or ADMINISTRATORS in caller.group_ids


def resolve_role(text: str) -> int | None:
    """A role filter given by id ("5") or by name ("Engineers"); None when unknown."""
    if text.isdigit():
        return int(text) if int(text) in GROUPS else None
    return _BY_NAME.get(text)


def view(key: ApiKey, user: User) -> ApiToken:
    now = utcnow()
    # A key made without a role (CLI, imports) acts with every group of its user: it
    # shows the highest of them.
    role_id = (
        key.role_id
        if key.role_id is not None
        else next((g for g in _DEFAULT_ORDER if g in user.group_ids), None)
    )
    return ApiToken(
        id=key.id,
        name=key.name,
        description=key.description,
        exp_date=isoformat_z(key.expires_at) if key.expires_at else None,
        deleted=key.revoked,
        expired=key.expires_at is not None and key.expires_at <= now,
        created=isoformat_z(key.created_at),
        client_user=TokenIssuer(
            deleted=key.revoked,
            user_id=user.id,
            user_name=user.name or user.email,
            user_email=user.email,
            client_id=user.client_id,
            role=Role(id=role_id, name=GROUPS[role_id]) if role_id is not None else None,
        ),
        last_usage=isoformat_z(key.last_usage) if key.last_usage else None,
    )


async def _account(session: AsyncSession, caller: Caller, client_id: int) -> tuple[int, int | None]:
    account = await accounts.get_visible(session, caller, client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    return account.id, account.reseller_id


async def list_tokens(
    session: AsyncSession, caller: Caller, client_id: int, flt: TokenFilter
) -> list[ApiToken]:
    await _account(session, caller, client_id)
    if flt.role_id is not None and flt.role_id not in GROUPS:
        return []
    if caller.is_member:
        flt = dataclasses.replace(flt, only_user_id=caller.user_id)
    return [view(key, user) for key, user in await repository.list_tokens(session, client_id, flt)]


async def _visible_token(
    session: AsyncSession,
    caller: Caller,
    client_id: int,
    token_id: int,
    *,
    for_update: bool = False,
) -> tuple[ApiKey, User]:
    found = await repository.get_token(session, client_id, token_id, for_update=for_update)
    if found is None:
        raise NotFound(TOKEN_NOT_FOUND)
    # A member manages the tokens it issued; those of others in its account are 403.
    if caller.is_member and found[1].id != caller.user_id:
        raise PermissionDenied()
    return found


async def get_token(
    session: AsyncSession, caller: Caller, client_id: int, token_id: int
) -> ApiToken:
    await _account(session, caller, client_id)
    return view(*await _visible_token(session, caller, client_id, token_id))


async def delete_token(session: AsyncSession, actor: Actor, client_id: int, token_id: int) -> None:
    caller = actor.caller
    account_id, reseller_id = await _account(session, caller, client_id)
    key, _ = await _visible_token(session, caller, client_id, token_id, for_update=True)
    if not await revoke_key(session, key):
        return  # already deleted: nothing changes
    owner = user_actions.Owner(account_id, reseller_id)
    await user_actions.record_change(
        session, actor, owner, "delete", Resource("api_token", key.id), {}
    )


def _role_of(caller: Caller, given: RoleIn | None) -> int:
    if given is None or (given.id is None and given.name is None):
        held = [g for g in _DEFAULT_ORDER if g in caller.group_ids]
        if is_administrator(caller):
            return ADMINISTRATORS
        if not held:
            raise ValidationError.field(ROLE_FIELD, "This field is required.")
        return held[0]
    role_id = given.id if given.id is not None else _BY_NAME.get(given.name or "")
    if role_id not in GROUPS or (given.name is not None and GROUPS[role_id] != given.name):
        raise ValidationError.field(ROLE_FIELD, f"Invalid role: {given.name or given.id}")
    assert role_id is not None
    if not is_administrator(caller) and role_id not in caller.group_ids:
        raise ValidationError.field(ROLE_FIELD, f"Can't create token with role {GROUPS[role_id]}")
    return role_id


def _within_own_expiry(caller: Caller, exp_date: datetime | None) -> None:
    """A token may not make a token that outlives it: without this, a token about to
    expire (or stolen, with a short life) could issue a successor that never expires.
    Refused with 400 rather than capped, so the client never holds a token whose expiry
    differs from the one it asked for. A key without expiry may issue any."""
    own = caller.key_expires_at
    if own is None:
        return
    if exp_date is None or exp_date > own:
        raise ValidationError.field(
            "exp_date",
            "Must not be later than the API token making this request expires "
            f"({isoformat_z(own)}); null (never) is refused too.",
        )


async def create_token(
    session: AsyncSession, actor: Actor, client_id: int, body: TokenCreate, idempotency: KeyClaim
) -> ApiTokenCreated:
    caller = actor.caller
    account_id, reseller_id = await _account(session, caller, client_id)
    # A token acts as the user who issues it, so it is issued in that user's account:
    # an operator or a reseller cannot issue one in a client's account.
    if account_id != caller.account_id:
        raise PermissionDenied("API tokens are issued in your own account only.")
    role_id = _role_of(caller, body.client_user.role)
    if body.exp_date is not None and body.exp_date <= utcnow():
        raise ValidationError.field("exp_date", "Must be in the future.")
    _within_own_expiry(caller, body.exp_date)
    # Every check of the caller (its role, its token's role and expiry, its account) has
    # passed: only now may a repeated key replay a stored token.
    await idempotency.claim()
    user = await session.get(User, caller.user_id)
    assert user is not None  # the caller was authenticated in this request
    key, token = await issue_key(
        session,
        user,
        name=body.name,
        description=body.description,
        expires_at=body.exp_date,
        role_id=role_id,
    )
    out = view(key, user)
    owner = user_actions.Owner(account_id, reseller_id)
    data = out.model_dump(mode="json", exclude_none=True)
    await user_actions.record_change(
        session, actor, owner, "create", Resource("api_token", key.id), data
    )
    return ApiTokenCreated(**out.model_dump(), token=token)


# --- shared with the command line (command.py), which acts as the operator ----------


async def issue_key(
    session: AsyncSession,
    user: User,
    *,
    name: str | None,
    description: str | None = None,
    expires_at: datetime | None = None,
    role_id: int | None = None,
) -> tuple[ApiKey, str]:
    """Stores a new key acting as ``user``; returns it and its token ``<id>_<secret>``,
    the only time the secret exists outside the caller (only its hash is stored)."""
    key = ApiKey(
        user_id=user.id,
        name=name,
        description=description,
        expires_at=expires_at,
        role_id=role_id,
        secret_hash="",
    )
    session.add(key)
    await session.flush()  # the id is part of the hash
    secret = new_api_secret()
    key.secret_hash = hash_api_secret(key.id, secret)
    await session.flush()
    await session.refresh(key)
    return key, f"{key.id}_{secret}"


async def revoke_key(session: AsyncSession, key: ApiKey) -> bool:
    """The key stops authenticating at once; False when it was revoked already."""
    if key.revoked:
        return False
    key.revoked = True
    await session.flush()
    return True
