"""Who a portal cookie signs in, asked by every page on every request.

Built as the API's key lookup is (auth/service.py): one statement built once, run on the
driver's connection (db/driver.py), its plain rows unpacked by position: the session,
its user, the user's account and groups, in one round trip, with no ORM object and no
ORM session (a page that needs none, such as the addendum browser, never opens one). A
seller's session (sellers are not users, and few) takes credentials.py's ORM path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.config import Settings
from cloudadmin.db import driver
from cloudadmin.db.models.accounts import Client, User, user_groups
from cloudadmin.db.models.portal import PortalSession
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.sign_in.credentials import PortalKind, PortalUser, caller_of, seller_of
from cloudadmin.iam.sign_in.session_row import SessionRow

_WIDTH = len(sessions.SESSION_COLUMNS)
# The session's columns (SessionRow's order), then its user's, account's and a group:
# one row per group of the user (one with no group). Unpacked by position below.
_LIVE = driver.Static(
    select(
        *sessions.SESSION_COLUMNS,
        User.email, User.name, User.superuser, User.deleted, User.is_active,
        Client.id, Client.client_type, Client.reseller_id, Client.deleted,
        user_groups.c.group_id,
    )
    .select_from(PortalSession)
    .outerjoin(User, User.id == PortalSession.user_id)
    .outerjoin(Client, Client.id == User.client_id)
    .outerjoin(user_groups, user_groups.c.user_id == User.id)
    .where(PortalSession.id_hash == bindparam("id_hash"))
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SignedIn:
    session: SessionRow
    user: PortalUser
    caller: Caller


async def signed_in(
    conn: AsyncConnection,
    session_id: str,
    settings: Settings,
    orm: Callable[[], Awaitable[AsyncSession]],
) -> SignedIn | None:
    """The live session ``session_id`` names and who it signs in; None when there is
    none, it expired (it is deleted) or its person may no longer sign in. ``orm`` gives
    the request's ORM session, for a seller's."""
    if not session_id:
        return None
    rows = await driver.fetch(conn, _LIVE, {"id_hash": sessions.digest(session_id)})
    if not rows:
        return None
    first = rows[0]
    row = await sessions.kept(conn, SessionRow(*first[:_WIDTH]), settings)
    if row is None:
        return None
    if row.seller_id is not None:
        db = await orm()
        seller = await seller_of(db, row.seller_id)
        return None if seller is None else SignedIn(row, seller, await caller_of(db, seller))
    email, name, superuser, deleted, active, account_id, account_type, reseller_id, gone = first[
        _WIDTH:-1
    ]
    if row.user_id is None or deleted or not active or gone:
        return None
    kind = PortalKind.of(superuser, account_type == "reseller")
    user = PortalUser(row.user_id, email, name or email, kind)
    caller = Caller(
        user_id=row.user_id,
        user_email=email,
        superuser=kind is PortalKind.operator,
        group_ids=frozenset(found[-1] for found in rows if found[-1] is not None),
        key_id=None,
        account_id=account_id,
        account_type=account_type,
        account_reseller_id=reseller_id,
    )
    return SignedIn(row, user, caller)
