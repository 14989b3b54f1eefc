"""FastAPI dependencies: the request's session, its caller, and what the application
holds for handlers (its secret box, its outbound policy)."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.auth.apikey import parse_authorization
from cloudadmin.auth.app_state import app_state
from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.auth.service import RefusedKnownKey, authenticate, notice_due
from cloudadmin.db.request_db import RequestDatabase
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ApiError, TokenNotValid
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Destinations, Outbound


class NoteFailedLogin(Protocol):
    """Queues the failed-login notice of a known key, on a connection of its own.

    The notice is a mail (events/mail.py), and events sit above auth: create_app hands
    events.mail.note_failed_login over as ``AppState.note_failed_login``."""

    async def __call__(self, *, key_id: int, account_id: int, source_ip: str) -> None: ...


# The scheme of every authenticated operation ("APIKey"), for the OpenAPI document only
# (web/openapi.py): get_caller reads the header itself, for exact errors. As a dependency
# of get_caller it was solved on every request, and a security scheme's bookkeeping in
# FastAPI's dependency solving cost 30-60 µs of each (docs/performance.md, "The list's
# request path"), for one header lookup.
API_KEY_SCHEME = APIKeyHeader(
    name="Authorization",
    scheme_name="APIKey",
    description="`apikey <id>_<secret>`",
    auto_error=False,
)


def request_db(request: Request) -> RequestDatabase:
    """The request's database, opened by ApiRoute (web/route.py) and kept on Starlette's
    untyped state bag: read through here, so that every use is typed."""
    db: RequestDatabase = request.state.db
    return db


async def get_session(request: Request) -> AsyncSession:
    """The ORM session of the request's one transaction (opened by ApiRoute): a read's
    or a write's, as its route declares or, undeclared, as its method says (GET and
    HEAD read; web/route.py)."""
    return await request_db(request).session()


Session = Annotated[AsyncSession, Depends(get_session)]


async def get_read_session(request: Request) -> AsyncSession:
    """Declares the route a read, whatever its method: no transaction (no write lock on
    SQLite), and a session that refuses to flush a change (db/engine.py)."""
    return await request_db(request).session()


async def get_write_session(request: Request) -> AsyncSession:
    """Declares the route a write, whatever its method: one transaction, committed by
    ApiRoute when the answer is a success."""
    return await request_db(request).session()


# What a handler declares (as Polar's AsyncReadSession and AsyncSession): ApiRoute
# opens the request's database by it (web/route.py, ``transaction_mode``).
ReadSession = Annotated[AsyncSession, Depends(get_read_session)]
WriteSession = Annotated[AsyncSession, Depends(get_write_session)]


async def get_connection(request: Request) -> AsyncConnection:
    """The request's connection, for Core statements (db/request_db.py): a read that
    needs no ORM object opens no session."""
    return await request_db(request).connection()


Connection = Annotated[AsyncConnection, Depends(get_connection)]


async def get_caller(request: Request) -> Caller:
    throttle = app_state(request.app).throttle
    db = request_db(request)
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
            await app_state(request.app).note_failed_login(
                key_id=refused.key_id,
                account_id=refused.account_id,
                source_ip=request.client.host if request.client else "",
            )
        raise
    assert caller.key_id is not None  # authenticate() always names the key
    await throttle.count(caller.key_id)
    request.state.caller = caller
    return caller


CurrentCaller = Annotated[Caller, Depends(get_caller)]


async def presented_caller(conn: AsyncConnection, request: Request) -> Caller | None:
    """The caller of a request refused before its key was checked (a body that does not
    parse, text the database cannot store), if the key it presents is valid: such a
    request is logged like any other."""
    try:
        return await authenticate(conn, parse_authorization(request.headers.get("authorization")))
    except ApiError:
        return None


async def get_actor(request: Request, caller: CurrentCaller) -> Actor:
    return Actor(
        caller=caller,
        source_ip=request.client.host if request.client else "",
        user_agent=request.headers.get("user-agent", "")[:512],
        request_id=str(getattr(request.state, "request_id", "")),
    )


CurrentActor = Annotated[Actor, Depends(get_actor)]


# async: a plain function would be run in the thread pool.
async def get_secret_box(request: Request) -> SecretBox:
    return app_state(request.app).secret_box


async def get_outbound(request: Request) -> Outbound:
    return app_state(request.app).outbound


async def get_destinations(request: Request) -> Destinations:
    state = app_state(request.app)
    return Destinations(outbound=state.outbound, box=state.secret_box)


# What a handler hands its service from the application: the box that encrypts stored
# secrets, where outbound connections may go, and both together for a change that
# stores a destination with its secret.
AppSecretBox = Annotated[SecretBox, Depends(get_secret_box)]
AppOutbound = Annotated[Outbound, Depends(get_outbound)]
AppDestinations = Annotated[Destinations, Depends(get_destinations)]
