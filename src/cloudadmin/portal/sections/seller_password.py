"""A seller's set-password link (docs/portal.md, "Users"): ``/portal/set-password?token=``,
the page the seller's invitation (or password reset) mails. It needs no session: the
token, valid 24 hours and single use, is what proves the seller; setting the password
activates the seller (iam/sellers/access.py).

The form carries a token of its own (double submit, as the sign-in form): a cookie and
a hidden field that must match. A refused link counts as a failed authentication of the
client's address (the API's set-password does the same), and past the limit the page
answers 429 before any token is checked.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.errors import ApiError, Throttled
from cloudadmin.iam.sellers import access
from cloudadmin.iam.sign_in.credentials import caller_of, seller_of
from cloudadmin.iam.users.invitations import TokenRefused
from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.portal.context import PREFIX, PageAnswer, PortalRoute, forbidden_form, see_other
from cloudadmin.portal.forms import Form, errors_of, read_form
from cloudadmin.portal.pages import fragment, page, refused
from cloudadmin.web.app_state import app_state

FORM_COOKIE = "portal_set_password"
MAX_TOKEN = 100

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


def _tokens(request: Request) -> SetPasswordTokens:
    return access.seller_tokens(tuple(app_state(request.app).settings.secret_keys()))


def _form_page(
    request: Request, token: str, *, form: Form | None = None, status: int = 200
) -> Response:
    check = secrets.token_urlsafe(32)
    content = fragment(
        "users/set_password.html", csrf_token=check, token=token, form=form or Form()
    )
    response = page("Set your password", content, status=status)
    response.set_cookie(
        FORM_COOKIE,
        check,
        path=f"{PREFIX}/set-password",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


def _link_refused(message: str, status: int = 400) -> Response:
    content = fragment(
        "refused.html",
        heading="This link does not work",
        text=f"{message} Ask your reseller for a new invitation.",
        link=f"{PREFIX}/sign-in",
        link_text="To the sign-in page",
    )
    return page("This link does not work", content, status=status)


async def _admitted(request: Request) -> None:
    try:
        await app_state(request.app).throttle.admit(request)
    except Throttled as throttled:
        raise PageAnswer(
            refused(
                "Too many attempts",
                "Too many refused links or sign-ins from this address. Wait a while and try again.",
                status=429,
                headers=throttled.headers,
            )
        ) from None


@router.get("/set-password")
async def seller_password_form(request: Request, token: str = "") -> Response:
    """The form, when the link still sets a password; else why not."""
    await _admitted(request)
    token = token[:MAX_TOKEN]
    db = await request.state.db.session()
    problem = await access.check_link(db, _tokens(request), token)
    if problem is not None:
        await db.rollback()
        await app_state(request.app).throttle.failed(request)
        raise PageAnswer(_link_refused(problem))
    return _form_page(request, token)


@router.get("/set-password/done")
async def seller_password_set(request: Request) -> Response:
    content = fragment(
        "refused.html",
        heading="Your password is set",
        text="Sign in with your e-mail address and the new password.",
        link=f"{PREFIX}/sign-in",
        link_text="Sign in",
    )
    return page("Your password is set", content)


@router.post("/set-password")
async def set_seller_password(request: Request) -> Response:
    """Sets the seller's password and activates it; the link is then used up."""
    await _admitted(request)
    form = await read_form(request)
    presented = str((await request.form()).get("csrf_token") or "")
    expected = request.cookies.get(FORM_COOKIE, "")
    if not (expected and hmac.compare_digest(presented, expected)):
        raise PageAnswer(forbidden_form())
    token = form.get("token")[:MAX_TOKEN]
    password = form.get("password")
    if password != form.get("password_again"):
        form.errors.setdefault("password_again", "The two passwords differ.")
    if form.errors:
        raise PageAnswer(_form_page(request, token, form=form, status=400))
    db = await request.state.db.session()
    try:
        seller = await access.set_password(db, _tokens(request), token, password)
    except TokenRefused as refusal:
        await db.rollback()
        await app_state(request.app).throttle.failed(request)
        raise PageAnswer(_link_refused(refusal.fields["token"][0])) from None
    except ApiError as weak:
        form.refuse(errors_of(weak))
        raise PageAnswer(_form_page(request, token, form=form, status=400)) from None
    # The change is in the activity log as the seller's own.
    user = await seller_of(db, seller.id)
    if user is not None:
        request.state.caller = await caller_of(db, user)
    response = see_other(f"{PREFIX}/set-password/done")
    response.delete_cookie(FORM_COOKIE, path=f"{PREFIX}/set-password")
    return response
