""" "Forgot your password?" (docs/portal.md, "Signing in"): the page that mails a
set-password link (iam/sign_in/password_reset.py), and the link's page that sets the new
password. Both are pages before a session exists (before_session.py)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.errors import ValidationError
from cloudadmin.events.mail import PlatformMailServer
from cloudadmin.iam.sign_in import password_reset
from cloudadmin.iam.sign_in.credentials import caller_of, user_of
from cloudadmin.iam.users.invitations import TokenRefused
from cloudadmin.iam.users.link_deps import get_link_base, get_set_password_tokens
from cloudadmin.iam.users.schemas import SetPassword
from cloudadmin.iam.users.set_password_token import Refusal
from cloudadmin.portal.before_session import TOO_MANY_ATTEMPTS, admit, checked_form, form_page
from cloudadmin.portal.context import PREFIX, SESSION_COOKIE, PageAnswer, PortalRoute, see_other
from cloudadmin.portal.forms import Form, errors_of, parse, read_form
from cloudadmin.portal.pages import fragment, page
from cloudadmin.web.app_state import app_state

RESET_SENT = (
    "If the address is known, a mail is on its way with a link to choose a new password. "
    "The link works once, within 24 hours."
)
RESET_PAGE = "/reset-password?token="
LINK_REFUSALS = {
    Refusal.invalid: "This link is not valid, or it was used already. Ask for a new one.",
    Refusal.expired: "This link has expired. Ask for a new one.",
}

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


def _request_page(request: Request, form: Form, *, status: int = 200) -> Response:
    return form_page(
        request, "Forgot your password?", "reset_request.html", status=status, form=form
    )


@router.get("/forgot-password")
async def forgot_password_form(request: Request) -> Response:
    return _request_page(request, Form())


@router.post("/forgot-password")
async def request_password_reset(request: Request) -> Response:
    """Mails a reset link to the user the address names, if any; the same answer for
    any address, and every request counts in the failed-authentication throttle."""
    state = app_state(request.app)
    await checked_form(request, TOO_MANY_ATTEMPTS)
    form = await read_form(request)
    email = form.get("email").strip()
    if not email or "@" not in email or len(email) > 320:
        form.refuse({"email": "Enter the e-mail address you sign in with."})
        raise PageAnswer(_request_page(request, form, status=400))
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
    return form_page(
        request,
        "Choose a new password",
        "reset.html",
        status=status,
        token=token,
        form=form,
        problem=problem,
    )


def _link_refused(request: Request, refusal: Refusal) -> PageAnswer:
    """The link's page saying why the link no longer works (400)."""
    return PageAnswer(
        _reset_page(request, token="", form=Form(), problem=LINK_REFUSALS[refusal], status=400)
    )


@router.get("/reset-password")
async def reset_password_form(request: Request, token: str = "") -> Response:
    """The link's page: the new password's form, or why the link no longer works (a
    refused link counts as a failed authentication, as the API's set-password)."""
    state = app_state(request.app)
    await admit(request, TOO_MANY_ATTEMPTS)
    db = await request.state.db.session()
    refusal = await password_reset.link_refusal(
        db, await get_set_password_tokens(request), token[:100]
    )
    if refusal is not None:
        await db.rollback()
        await state.throttle.failed(request)
        raise _link_refused(request, refusal)
    return _reset_page(request, token=token, form=Form())


@router.post("/reset-password")
async def reset_password(request: Request) -> Response:
    """Sets the new password through the API's set-password service; every session of
    the user ends, and the sign-in page says so."""
    state = app_state(request.app)
    await checked_form(request, TOO_MANY_ATTEMPTS)
    form = await read_form(request)
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
        known = next((r for r in LINK_REFUSALS if r.value == message), Refusal.invalid)
        raise _link_refused(request, known) from None
    except ValidationError as refusal:
        form.refuse(errors_of(refusal))
        raise PageAnswer(_reset_page(request, token=token, form=form, status=400)) from None
    user = await user_of(db, user_id)
    if user is not None:  # the change is in the activity log, as the user's
        request.state.caller = await caller_of(db, user)
    response = see_other(f"{PREFIX}/sign-in?done=reset")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response
