"""Signing in and out (docs/portal.md, "Signing in"): the pages before a session exists.

The sign-in form is protected by a token of its own (double submit: the cookie and the
form field must match), so that another site cannot sign a browser in to an account of
its choosing; so are the forms of the two-factor step and of the password reset.

A user with two-factor sign-in gets no session from the password alone: the password's
form hands the browser a pending sign-in (a signed cookie, iam/sign_in/two_factor.py),
and the code's form starts the session. "Forgot your password?" mails a set-password
link (iam/sign_in/password_reset.py) whose page sets the new password.
"""

from __future__ import annotations

import hmac
import secrets
from functools import lru_cache
from urllib.parse import unquote, urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.auth.app_state import app_state
from cloudadmin.auth.throttle import client_address
from cloudadmin.errors import Throttled, ValidationError
from cloudadmin.events.mail import PlatformMailServer
from cloudadmin.iam.sign_in import password_reset, sessions, two_factor
from cloudadmin.iam.sign_in.credentials import (
    PortalUser,
    Refused,
    caller_of,
    check_password,
    user_of,
    user_of_session,
)
from cloudadmin.iam.sign_in.failed_sign_in import note_failed_sign_in
from cloudadmin.iam.users.invitations import TokenRefused
from cloudadmin.iam.users.link_deps import get_link_base, get_set_password_tokens
from cloudadmin.iam.users.schemas import SetPassword
from cloudadmin.iam.users.set_password_token import Refusal
from cloudadmin.portal.context import (
    CSRF_HEADER,
    PREFIX,
    SESSION_COOKIE,
    PageAnswer,
    PortalRoute,
    forbidden_form,
    see_other,
)
from cloudadmin.portal.forms import Form, errors_of, parse, read_form
from cloudadmin.portal.pages import fragment, page, refused

SIGN_IN_COOKIE = "portal_sign_in"
# The pending sign-in of a user with two-factor sign-in, between password and code.
TWO_FACTOR_COOKIE = "portal_two_factor"
WRONG = "The e-mail address or the password is wrong."
WRONG_CODE = "The code is wrong, or it was used already. Enter the code your app shows now."
TOO_LATE = "The sign-in took too long. Sign in again."
RESET_SENT = (
    "If the address is known, a mail is on its way with a link to choose a new password. "
    "The link works once, within 24 hours."
)
RESET_DONE = "Your new password is set, and every session of yours has ended. Sign in with it."
RESET_PAGE = "/reset-password?token="
LINK_REFUSALS = {
    Refusal.invalid: "This link is not valid, or it was used already. Ask for a new one.",
    Refusal.expired: "This link has expired. Ask for a new one.",
}
NOTICES = {"reset": RESET_DONE}

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
    scheme, no host, no ``//`` or backslash tricks, no ``.`` or ``..`` segment, plain
    or percent-encoded, that would lead out of /portal); else the start page."""
    if (
        target
        and target.startswith(f"{PREFIX}/")
        and "//" not in target
        and "\\" not in target
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in target)
        and len(target) <= 2000
    ):
        path = unquote(target.split("?", 1)[0].split("#", 1)[0])
        if not any(segment in (".", "..") for segment in path.split("/")) and "\\" not in path:
            return target
    return f"{PREFIX}/"


def _form_page(
    request: Request, title: str, template: str, *, status: int = 200, **values: object
) -> Response:
    """A page before a session exists, its form carrying a fresh double-submit token
    (its cookie set here)."""
    token = secrets.token_urlsafe(32)
    response = page(title, fragment(template, csrf_token=token, **values), status=status)
    set_cookie(request, response, SIGN_IN_COOKIE, token)
    return response


def sign_in_page(
    request: Request,
    *,
    email: str = "",
    message: str = "",
    status: int = 200,
    next_path: str = "",
    notice: str = "",
) -> Response:
    return _form_page(
        request,
        "Sign in",
        "sign_in.html",
        status=status,
        email=email,
        message=message,
        next_path=next_path,
        notice=notice,
    )


def _throttled(throttled: Throttled, text: str) -> PageAnswer:
    return PageAnswer(refused("Too many attempts", text, status=429, headers=throttled.headers))


async def _admit(request: Request, text: str) -> None:
    """The failed-authentication throttle: past the address's limit, the 429 page
    before anything is checked."""
    try:
        await app_state(request.app).throttle.admit(request)
    except Throttled as throttled:
        raise _throttled(throttled, text) from None


@lru_cache(maxsize=4)
def _tickets(keys: tuple[str, ...], minutes: float) -> two_factor.PendingSignIns:
    return two_factor.PendingSignIns.of(list(keys), minutes)


def pending_sign_ins(request: Request) -> two_factor.PendingSignIns:
    settings = app_state(request.app).settings
    return _tickets(tuple(settings.secret_keys()), settings.portal_two_factor_minutes)


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
    await _admit(request, "Too many failed sign-ins from this address. Wait a while and try again.")
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
    return await _password_passed(request, user, next_path)


# --- the second step of a two-factor sign-in --------------------------------------


def _code_page(
    request: Request, *, next_path: str, message: str = "", status: int = 200
) -> Response:
    return _form_page(
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
    await _admit(request, "Too many failed sign-ins from this address. Wait a while and try again.")
    form = await request.form()
    if not sign_in_token_valid(request, str(form.get("csrf_token") or "")):
        raise PageAnswer(forbidden_form())
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


# --- "Forgot your password?" --------------------------------------------------------


@router.get("/forgot-password")
async def forgot_password_form(request: Request) -> Response:
    return _form_page(request, "Forgot your password?", "reset_request.html", form=Form())


@router.post("/forgot-password")
async def request_password_reset(request: Request) -> Response:
    """Mails a reset link to the user the address names, if any; the same answer for
    any address, and every request counts in the failed-authentication throttle."""
    state = app_state(request.app)
    await _admit(request, "Too many attempts from this address. Wait a while and try again.")
    form = await read_form(request)
    presented = str((await request.form()).get("csrf_token") or "")
    if not sign_in_token_valid(request, presented):
        raise PageAnswer(forbidden_form())
    email = form.get("email").strip()
    if not email or "@" not in email or len(email) > 320:
        form.refuse({"email": "Enter the e-mail address you sign in with."})
        raise PageAnswer(
            _form_page(
                request, "Forgot your password?", "reset_request.html", status=400, form=form
            )
        )
    await state.throttle.failed(request)
    db = await request.state.db.session()
    await password_reset.request_reset(
        db,
        state.secret_box,
        await get_set_password_tokens(request),
        email=email,
        link_prefix=await get_link_base(request) + PREFIX + RESET_PAGE,
        platform_has_server=PlatformMailServer.from_settings(state.settings) is not None,
    )
    return page(
        "Forgot your password?",
        fragment("reset_sent.html", text=RESET_SENT),
    )


def _reset_page(
    request: Request, *, token: str, form: Form, problem: str = "", status: int = 200
) -> Response:
    return _form_page(
        request,
        "Choose a new password",
        "reset.html",
        status=status,
        token=token,
        form=form,
        problem=problem,
    )


@router.get("/reset-password")
async def reset_password_form(request: Request, token: str = "") -> Response:
    """The link's page: the new password's form, or why the link no longer works (a
    refused link counts as a failed authentication, as the API's set-password)."""
    state = app_state(request.app)
    await _admit(request, "Too many attempts from this address. Wait a while and try again.")
    db = await request.state.db.session()
    refusal = await password_reset.link_refusal(
        db, await get_set_password_tokens(request), token[:100]
    )
    if refusal is not None:
        await db.rollback()
        await state.throttle.failed(request)
        raise PageAnswer(
            _reset_page(request, token="", form=Form(), problem=LINK_REFUSALS[refusal], status=400)
        )
    return _reset_page(request, token=token, form=Form())


@router.post("/reset-password")
async def reset_password(request: Request) -> Response:
    """Sets the new password through the API's set-password service; every session of
    the user ends, and the sign-in page says so."""
    state = app_state(request.app)
    await _admit(request, "Too many attempts from this address. Wait a while and try again.")
    form = await read_form(request)
    presented = str((await request.form()).get("csrf_token") or "")
    if not sign_in_token_valid(request, presented):
        raise PageAnswer(forbidden_form())
    token = form.get("token")[:100]
    if form.get("password") != form.get("password_again"):
        form.refuse({"password_again": "The two passwords differ."})
    body = parse(SetPassword, {"token": token, "password": form.get("password")}, form)
    if body is None:
        raise PageAnswer(_reset_page(request, token=token, form=form, status=400))
    db = await request.state.db.session()
    try:
        user_id = await password_reset.complete_reset(
            db, await get_set_password_tokens(request), body
        )
    except TokenRefused as refusal:
        await db.rollback()
        await state.throttle.failed(request)
        message = next(iter(refusal.fields.get("token", [])), "")
        known = next((m for r, m in LINK_REFUSALS.items() if r.value == message), None)
        raise PageAnswer(
            _reset_page(
                request,
                token="",
                form=Form(),
                problem=known or LINK_REFUSALS[Refusal.invalid],
                status=400,
            )
        ) from None
    except ValidationError as refusal:
        form.refuse(errors_of(refusal))
        raise PageAnswer(_reset_page(request, token=token, form=form, status=400)) from None
    user = await user_of(db, user_id)
    if user is not None:  # the change is in the activity log, as the user's
        request.state.caller = await caller_of(db, user)
    response = see_other(f"{PREFIX}/sign-in?done=reset")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response


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
