"""FastAPI dependencies a handler declares: the request's database (its session or
connection), its caller and actor, and what the application holds for handlers (its
secret box, its outbound policy). Each reads the request or the app's state
(web/app_state.py); authentication itself is auth's (auth/request_caller.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.auth.request_caller import request_actor, request_caller
from cloudadmin.db.request_db import RequestDatabase
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Destinations, Outbound
from cloudadmin.web.app_state import app_state


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
    """The request's caller, authenticated on the request's database (ApiRoute knows
    this dependency: web/route.py, web/query_rule.py)."""
    state = app_state(request.app)
    return await request_caller(
        request, request_db(request), state.throttle, state.note_failed_login
    )


CurrentCaller = Annotated[Caller, Depends(get_caller)]


async def get_actor(request: Request, caller: CurrentCaller) -> Actor:
    return request_actor(request, caller)


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
