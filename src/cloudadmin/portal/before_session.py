"""What the pages before a session exists share (docs/portal.md, "Signing in"): their
forms' double-submit token, their cookies, where signing in may lead, and the
failed-authentication throttle.

Their forms are protected by a token of their own (double submit: the cookie and the
form field must match), so that another site cannot sign a browser in to an account of
its choosing, nor drive the two-factor step or the password reset.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import unquote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.errors import Throttled
from cloudadmin.portal.context import PREFIX, PageAnswer, forbidden_form
from cloudadmin.portal.pages import fragment, page, refused
from cloudadmin.web.app_state import app_state

SIGN_IN_COOKIE = "portal_sign_in"
TOO_MANY_SIGN_INS = "Too many failed sign-ins from this address. Wait a while and try again."
TOO_MANY_ATTEMPTS = "Too many attempts from this address. Wait a while and try again."


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


def form_page(
    request: Request, title: str, template: str, *, status: int = 200, **values: object
) -> Response:
    """A page before a session exists, its form carrying a fresh double-submit token
    (its cookie set here)."""
    token = secrets.token_urlsafe(32)
    response = page(title, fragment(template, csrf_token=token, **values), status=status)
    set_cookie(request, response, SIGN_IN_COOKIE, token)
    return response


def sign_in_token_valid(request: Request, presented: str) -> bool:
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    return bool(expected) and hmac.compare_digest(presented, expected)


async def admit(request: Request, text: str) -> None:
    """The failed-authentication throttle: past the address's limit, the 429 page
    (saying ``text``) before anything is checked."""
    try:
        await app_state(request.app).throttle.admit(request)
    except Throttled as throttled:
        raise PageAnswer(
            refused("Too many attempts", text, status=429, headers=throttled.headers)
        ) from None


async def checked_form(request: Request, too_many: str) -> FormData:
    """A posted form of a page before a session: admitted by the throttle (``admit``),
    then its double-submit token checked (a forged one is the 403 page)."""
    await admit(request, too_many)
    form = await request.form()
    if not sign_in_token_valid(request, str(form.get("csrf_token") or "")):
        raise PageAnswer(forbidden_form())
    return form
