"""Signing in and out (docs/portal.md, "Signing in"): the pages before a session exists.

The sign-in form is protected by a token of its own (double submit: the cookie and the
form field must match), so that another site cannot sign a browser in to an account of
its choosing.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.auth.app_state import app_state
from cloudadmin.auth.throttle import client_address
from cloudadmin.errors import Throttled
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.sign_in.credentials import (
    PortalUser,
    Refused,
    caller_of,
    check_password,
    user_of_session,
)
from cloudadmin.iam.sign_in.failed_sign_in import note_failed_sign_in
from cloudadmin.portal.context import (
    CSRF_HEADER,
    PREFIX,
    SESSION_COOKIE,
    PageAnswer,
    PortalRoute,
    forbidden_form,
    see_other,
)
from cloudadmin.portal.pages import fragment, page, refused

SIGN_IN_COOKIE = "portal_sign_in"
WRONG = "The e-mail address or the password is wrong."

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


def set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    # Secure when the request came over HTTPS, directly or through a trusted proxy
    # (web/proxies.py sets the scheme from X-Forwarded-Proto).
    response.set_cookie(
        name,
        value,
        path=PREFIX,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of the portal, never another site (no
    scheme, no host, no ``//`` or backslash tricks); else the start page."""
    if (
        target
        and target.startswith(f"{PREFIX}/")
        and "//" not in target
        and "\\" not in target
        and not any(ord(c) < 0x20 for c in target)
        and len(target) <= 2000
    ):
        return target
    return f"{PREFIX}/"


def sign_in_page(
    request: Request,
    *,
    email: str = "",
    message: str = "",
    status: int = 200,
    next_path: str = "",
) -> Response:
    token = secrets.token_urlsafe(32)
    content = fragment(
        "sign_in.html", csrf_token=token, email=email, message=message, next_path=next_path
    )
    response = page("Sign in", content, status=status)
    set_cookie(request, response, SIGN_IN_COOKIE, token)
    return response


def sign_in_token_valid(request: Request, presented: str) -> bool:
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    return bool(expected) and hmac.compare_digest(presented, expected)


async def start_session(request: Request, user: PortalUser, next_path: str) -> Response:
    """Signs the user in: a new session, its cookie, and on to ``next_path``."""
    db = await request.state.db.session()
    started = await sessions.start(db, user)
    # The sign-in is in the activity log, as the user's.
    request.state.caller = await caller_of(db, user)
    response = see_other(safe_next(next_path))
    set_cookie(request, response, SESSION_COOKIE, started.session_id)
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    return response


@router.get("/sign-in")
async def sign_in_form(request: Request, next: str = "") -> Response:
    settings = app_state(request.app).settings
    db = await request.state.db.session()
    if await sessions.current(db, request.cookies.get(SESSION_COOKIE), settings) is not None:
        return see_other(safe_next(next))
    return sign_in_page(request, next_path=safe_next(next) if next else "")


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    state = app_state(request.app)
    try:
        await state.throttle.admit(request)
    except Throttled as throttled:
        raise PageAnswer(
            refused(
                "Too many attempts",
                "Too many failed sign-ins from this address. Wait a while and try again.",
                status=429,
                headers=throttled.headers,
            )
        ) from None
    form = await request.form()
    if not sign_in_token_valid(request, str(form.get("csrf_token") or "")):
        raise PageAnswer(forbidden_form())
    email = str(form.get("email") or "")[:320]
    next_path = str(form.get("next") or "")
    db = await request.state.db.session()
    user = await check_password(db, email, str(form.get("password") or "")[:1024])
    if isinstance(user, Refused):
        # Let go of this connection first: the notice takes one of its own.
        await db.rollback()
        await state.throttle.failed(request)
        if user.user_id is not None:
            await note_failed_sign_in(
                state.sessionmaker, user_id=user.user_id, source_ip=client_address(request)
            )
        raise PageAnswer(
            sign_in_page(request, email=email, message=WRONG, status=401, next_path=next_path)
        )
    return await start_session(request, user, next_path)


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    settings = app_state(request.app).settings
    form = await request.form()
    presented = request.headers.get(CSRF_HEADER) or str(form.get("csrf_token") or "")
    session_id = request.cookies.get(SESSION_COOKIE, "")
    db = await request.state.db.session()
    row = await sessions.current(db, session_id, settings)
    if row is None or not sessions.csrf_valid(row, presented):
        raise PageAnswer(forbidden_form())  # not even the session's last use is noted
    user = await user_of_session(db, row)
    if user is not None:
        request.state.caller = await caller_of(db, user)
    await sessions.end(db, session_id)
    response = see_other(f"{PREFIX}/sign-in")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response
