"""A request's caller: its Authorization header checked on the request's database,
every refusal counted by the throttle and a known key's refusal noticed.

What the request brings (its database, the app's throttle and failed-login notice) is
handed in by web's ``get_caller`` (web/deps.py), which reads them from the app's state.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from cloudadmin.auth.apikey import parse_authorization
from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.auth.service import RefusedKnownKey, authenticate, notice_due
from cloudadmin.auth.throttle import Throttle
from cloudadmin.db.request_db import RequestDatabase
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ApiError, TokenNotValid


class NoteFailedLogin(Protocol):
    """Queues the failed-login notice of a known key, on a connection of its own.

    The notice is a mail (events/mail.py), and events sit above auth: create_app hands
    events.mail.note_failed_login over as ``AppState.note_failed_login``."""

    async def __call__(self, *, key_id: int, account_id: int, source_ip: str) -> None: ...


async def request_caller(
    request: Request, db: RequestDatabase, throttle: Throttle, note_failed_login: NoteFailedLogin
) -> Caller:
    """The caller whose key the request presents, or TokenNotValid (NotAuthenticated
    without a key)."""
    try:
        # No database work for a bad header.
        presented = parse_authorization(request.headers.get("authorization"))
        caller = await authenticate(await db.connection(), presented)
    except TokenNotValid as refused:
        # Let go of the request's connection (and its transaction, SQLite's write lock)
        # first: the notice below takes a connection of its own, and a request holding
        # two could wait for a pool whose every connection is held by such requests.
        await db.release()
        await throttle.failed(request)
        # The lookup told when the key was last noticed: most refusals of a flood end
        # here, without a transaction of their own (at most one per key per interval).
        if isinstance(refused, RefusedKnownKey) and notice_due(refused.noticed_at, utcnow()):
            await note_failed_login(
                key_id=refused.key_id,
                account_id=refused.account_id,
                source_ip=request.client.host if request.client else "",
            )
        raise
    assert caller.key_id is not None  # authenticate() always names the key
    await throttle.count(caller.key_id)
    request.state.caller = caller
    return caller


async def presented_caller(conn: AsyncConnection, request: Request) -> Caller | None:
    """The caller of a request refused before its key was checked (a body that does not
    parse, text the database cannot store), if the key it presents is valid: such a
    request is logged like any other."""
    try:
        return await authenticate(conn, parse_authorization(request.headers.get("authorization")))
    except ApiError:
        return None


def request_actor(request: Request, caller: Caller) -> Actor:
    """The caller plus where the request came from, for the activity log and events."""
    return Actor(
        caller=caller,
        source_ip=request.client.host if request.client else "",
        user_agent=request.headers.get("user-agent", "")[:512],
        request_id=str(getattr(request.state, "request_id", "")),
    )
