"""Signing in and out (docs/portal.md, "Signing in"): the password's form, the
two-factor step and signing out. The pages before a session share before_session.py
(their double-submit token, cookies, throttle); the password reset is
password_reset_pages.py.

A user with two-factor sign-in gets no session from the password alone: the password's
form hands the browser a pending sign-in (a signed cookie, iam/sign_in/two_factor.py),
and the code's form starts the session.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.auth.throttle import client_address
from cloudadmin.iam.sign_in import sessions, two_factor
from cloudadmin.iam.sign_in.credentials import (
    PortalUser,
    Refused,
    caller_of,
    check_password,
    user_of_session,
)
from cloudadmin.iam.sign_in.failed_sign_in import note_failed_sign_in
from cloudadmin.portal.before_session import (
    SIGN_IN_COOKIE,
    TOO_MANY_SIGN_INS,
    checked_form,
    form_page,
    safe_next,
    set_cookie,
)
from cloudadmin.portal.context import (
    CSRF_HEADER,
    PREFIX,
    SESSION_COOKIE,
    PageAnswer,
    PortalRoute,
    forbidden_form,
    see_other,
)
from cloudadmin.web.app_state import app_state

# The pending sign-in of a user with two-factor sign-in, between password and code.
TWO_FACTOR_COOKIE = "portal_two_factor"
WRONG = "The e-mail address or the password is wrong."
WRONG_CODE = "The code is wrong, or it was used already. Enter the code your app shows now."
TOO_LATE = "The sign-in took too long. Sign in again."
RESET_DONE = "Your new password is set, and every session of yours has ended. Sign in with it."
NOTICES = {"reset": RESET_DONE}

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


def sign_in_page(
    request: Request,
    *,
    email: str = "",
    message: str = "",
    status: int = 200,
    next_path: str = "",
    notice: str = "",
) -> Response:
    return form_page(
        request,
        "Sign in",
        "sign_in.html",
        status=status,
        email=email,
        message=message,
        next_path=next_path,
        notice=notice,
    )


@lru_cache(maxsize=4)
def _tickets(keys: tuple[str, ...], minutes: float) -> two_factor.PendingSignIns:
    return two_factor.PendingSignIns.of(list(keys), minutes)


def pending_sign_ins(request: Request) -> two_factor.PendingSignIns:
    settings = app_state(request.app).settings
    return _tickets(tuple(settings.secret_keys()), settings.portal_two_factor_minutes)


async def start_session(request: Request, user: PortalUser, next_path: str) -> Response:
    """Signs the user in: a new session, its cookie, and on to ``next_path``."""
    db = await request.state.db.session()
    started = await sessions.start(db, user)
    # The sign-in is in the activity log, as the user's.
    request.state.caller = await caller_of(db, user)
    response = see_other(safe_next(next_path))
    set_cookie(request, response, SESSION_COOKIE, started.session_id)
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    response.delete_cookie(TWO_FACTOR_COOKIE, path=PREFIX)
    return response


async def _password_passed(request: Request, user: PortalUser, next_path: str) -> Response:
    """After the right password: the session, or for a user with two-factor sign-in
    the code's page, with the pending sign-in's ticket as a cookie."""
    db = await request.state.db.session()
    if not await two_factor.required(db, user):
        return await start_session(request, user, next_path)
    ticket = await two_factor.pending_ticket(db, pending_sign_ins(request), user)
    query = "?" + urlencode({"next": next_path}) if next_path else ""
    response = see_other(f"{PREFIX}/sign-in/code{query}")
    set_cookie(request, response, TWO_FACTOR_COOKIE, ticket)
    return response


@router.get("/sign-in")
async def sign_in_form(request: Request, next: str = "", done: str = "") -> Response:
    settings = app_state(request.app).settings
    db = await request.state.db.session()
    if await sessions.current(db, request.cookies.get(SESSION_COOKIE), settings) is not None:
        return see_other(safe_next(next))
    return sign_in_page(
        request, next_path=safe_next(next) if next else "", notice=NOTICES.get(done, "")
    )


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    state = app_state(request.app)
    form = await checked_form(request, TOO_MANY_SIGN_INS)
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
    return await _password_passed(request, user, next_path)


# --- the second step of a two-factor sign-in --------------------------------------


def _code_page(
    request: Request, *, next_path: str, message: str = "", status: int = 200
) -> Response:
    return form_page(
        request,
        "Enter your code",
        "two_factor.html",
        status=status,
        message=message,
        next_path=next_path,
    )


async def _pending_user(request: Request) -> PortalUser | None:
    db = await request.state.db.session()
    ticket = request.cookies.get(TWO_FACTOR_COOKIE, "")
    return await pending_sign_ins(request).user_of(db, ticket)


@router.get("/sign-in/code")
async def sign_in_code_form(request: Request, next: str = "") -> Response:
    if await _pending_user(request) is None:
        return sign_in_page(request, message=TOO_LATE, next_path=safe_next(next) if next else "")
    return _code_page(request, next_path=safe_next(next) if next else "")


@router.post("/sign-in/code")
async def sign_in_with_code(request: Request) -> Response:
    """The code of a pending sign-in: right, the session starts; wrong (or used
    already), the page again (401), counted in the failed-authentication throttle."""
    state = app_state(request.app)
    form = await checked_form(request, TOO_MANY_SIGN_INS)
    next_path = str(form.get("next") or "")
    user = await _pending_user(request)
    if user is None:
        raise PageAnswer(sign_in_page(request, message=TOO_LATE, status=401, next_path=next_path))
    db = await request.state.db.session()
    code = str(form.get("one_time_password") or "")[:32]
    if not await two_factor.check_code(db, state.secret_box, user.user_id, code):
        # Let go of this connection first: the count takes one of its own.
        await db.rollback()
        await state.throttle.failed(request)
        await two_factor.note_wrong_code(state.sessionmaker, user.user_id)
        raise PageAnswer(_code_page(request, next_path=next_path, message=WRONG_CODE, status=401))
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
