"""What the application holds for its requests, typed: one AppState per app.

Stored once on Starlette's untyped state bag (``app.state.cloudadmin``) and read only
through :func:`app_state`, so that every use is checked by mypy and a missing field is
an error at start-up, not an AttributeError in some request.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.applications import Starlette

from cloudadmin.auth.request_caller import NoteFailedLogin
from cloudadmin.auth.throttle import Throttle
from cloudadmin.config import Settings
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.web.request_log import RequestLog
from cloudadmin.web.turns import Turns

_KEY = "cloudadmin"


@dataclass(frozen=True, slots=True)
class AppState:
    settings: Settings
    # The pool, and sessions with a transaction each (a write request's).
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    # The same pool without explicit transactions (a read request's; db/engine.py).
    read_engine: AsyncEngine
    read_sessionmaker: async_sessionmaker[AsyncSession]
    turns: Turns
    throttle: Throttle
    secret_box: SecretBox
    outbound: Outbound
    # Implementations from the layers above their callers (docs/architecture.md,
    # "Layers"): the activity log for ApiRoute, the failed-login mail for authentication.
    request_log: RequestLog
    note_failed_login: NoteFailedLogin

    def install(self, app: Starlette) -> None:
        setattr(app.state, _KEY, self)


def app_state(app: Starlette) -> AppState:
    """The application's state (``app_state(request.app)`` in a request)."""
    state: AppState = getattr(app.state, _KEY)
    return state
