"""The portal's routes under /portal (docs/portal.md).

Each route opens its own transaction and commits only when the request is accepted:
a refused one (no session, a wrong CSRF token) writes nothing.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import APIRouter
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from cloudadmin.auth.app_state import app_state
from cloudadmin.auth.throttle import client_address
from cloudadmin.db.models.portal import PortalSession
from cloudadmin.errors import Throttled
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.sign_in.credentials import (
    PortalKind,
    PortalUser,
    Refused,
    check_password,
    user_of,
)
from cloudadmin.iam.sign_in.failed_sign_in import note_failed_sign_in
from cloudadmin.portal.pages import PortalRoute, fragment, page, refused
from cloudadmin.portal.pages import static_files as static_files  # app.py mounts it

PREFIX = "/portal"
STATIC_PATH = f"{PREFIX}/static"
SESSION_COOKIE = "portal_session"
# The sign-in form's own token (double submit: the cookie and the form field must
# match), so that another site cannot sign a browser in to an account of its choosing.
SIGN_IN_COOKIE = "portal_sign_in"
CSRF_HEADER = "X-CSRF-Token"
WRONG = "The e-mail address or the password is wrong."

# What each kind of user will find in the portal (issue 32's sections). Listed as
# coming, not linked, until a section exists.
SECTIONS = {
    PortalKind.operator: ["Accounts", "Users", "Activity logs", "Billing", "Events", "Profile"],
    PortalKind.reseller: [
        "Accounts",
        "Users",
        "Activity logs",
        "Vendor settings",
        "Billing",
        "Events",
        "Profile",
    ],
}
SCOPES = {
    PortalKind.operator: "You are an operator: you see every account.",
    PortalKind.reseller: "You are a reseller: you see your own clients and settings.",
}

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
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


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _sign_in_page(
    request: Request, *, email: str = "", message: str = "", status: int = 200
) -> Response:
    token = secrets.token_urlsafe(32)
    content = fragment("sign_in.html", csrf_token=token, email=email, message=message)
    response = page("Sign in", content, status=status)
    _set_cookie(request, response, SIGN_IN_COOKIE, token)
    return response


def _forbidden() -> Response:
    return refused(
        "Refused",
        "The form was not sent from this portal's own page, or its page is too old. "
        "Load the page again and repeat.",
        status=403,
    )


async def _signed_in(request: Request, db: AsyncSession) -> tuple[PortalSession, PortalUser] | None:
    settings = app_state(request.app).settings
    row = await sessions.current(db, request.cookies.get(SESSION_COOKIE), settings)
    if row is None:
        return None
    user = await user_of(db, row.user_id)
    return (row, user) if user is not None else None


@router.get("/sign-in")
async def sign_in_form(request: Request) -> Response:
    async with app_state(request.app).sessionmaker() as db:
        if await _signed_in(request, db) is not None:
            await db.commit()
            return _see_other(f"{PREFIX}/")
        await db.commit()  # an expired session's row is gone
    return _sign_in_page(request)


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    state = app_state(request.app)
    try:
        await state.throttle.admit(request)
    except Throttled as throttled:
        return refused(
            "Too many attempts",
            "Too many failed sign-ins from this address. Wait a while and try again.",
            status=429,
            headers=throttled.headers,
        )
    form = await request.form()
    presented = str(form.get("csrf_token") or "")
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    if not (expected and hmac.compare_digest(presented, expected)):
        return _forbidden()
    email = str(form.get("email") or "")
    async with state.sessionmaker() as db:
        user = await check_password(db, email, str(form.get("password") or ""))
        if isinstance(user, Refused):
            # Let go of this connection first: the notice takes one of its own.
            await db.rollback()
            await db.close()
            await state.throttle.failed(request)
            if user.user_id is not None:
                await note_failed_sign_in(
                    state.sessionmaker, user_id=user.user_id, source_ip=client_address(request)
                )
            return _sign_in_page(request, email=email, message=WRONG, status=401)
        started = await sessions.start(db, user.user_id)
        await db.commit()
    response = _see_other(f"{PREFIX}/")
    _set_cookie(request, response, SESSION_COOKIE, started.session_id)
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    return response


@router.get("/")
async def home(request: Request) -> Response:
    async with app_state(request.app).sessionmaker() as db:
        found = await _signed_in(request, db)
        await db.commit()
    if found is None:
        return _see_other(f"{PREFIX}/sign-in")
    row, user = found
    navigation = fragment(
        "navigation.html", csrf_token=row.csrf_token, email=user.email, kind=user.kind.value
    )
    if user.kind is PortalKind.client:
        content = fragment("not_here.html", email=user.email)
        return page(
            "Not part of the Admin Portal",
            content,
            status=403,
            csrf_token=row.csrf_token,
            navigation=navigation,
        )
    content = fragment(
        "home.html", name=user.name, scope=SCOPES[user.kind], sections=SECTIONS[user.kind]
    )
    return page("Home", content, csrf_token=row.csrf_token, navigation=navigation)


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    form = await request.form()
    presented = request.headers.get(CSRF_HEADER) or str(form.get("csrf_token") or "")
    session_id = request.cookies.get(SESSION_COOKIE)
    async with app_state(request.app).sessionmaker() as db:
        found = await _signed_in(request, db)
        if found is None or not sessions.csrf_valid(found[0], presented) or not session_id:
            await db.rollback()  # not even the session's last use is noted
            return _forbidden()
        await sessions.end(db, session_id)
        await db.commit()
    response = _see_other(f"{PREFIX}/sign-in")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response
