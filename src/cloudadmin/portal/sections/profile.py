"""The profile (docs/portal.md, "Profile"): the signed-in user's own password, two-factor
sign-in, API tokens and sessions.

Everything here acts on the user itself, through the services the API and the sign-in
use: the password's rules are the API's set-password rules (iam/sign_in/profile.py),
the tokens are the API's token services (iam/api_tokens/service.py, with the portal's
caller: a session has no API key, so a token it issues may expire whenever it likes).
A seller (not a user) finds only its sessions' note here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from fastapi import APIRouter
from markupsafe import Markup
from starlette.responses import Response

from cloudadmin.db.models import GROUPS
from cloudadmin.errors import NotFound, ValidationError
from cloudadmin.iam.api_tokens import service as tokens
from cloudadmin.iam.api_tokens.repository import TokenFilter
from cloudadmin.iam.api_tokens.schemas import ApiToken, TokenCreate
from cloudadmin.iam.sign_in import profile, sessions, two_factor
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.iam.sign_in.profile import WrongPassword
from cloudadmin.kit.ints import Int32
from cloudadmin.kit.timeparse import isoformat_z
from cloudadmin.portal.context import PREFIX, AdminPage, Portal, PortalRoute, see_other
from cloudadmin.portal.forms import FORM, Form, errors_of, parse, read_form
from cloudadmin.web.app_state import app_state
from cloudadmin.web.idempotency import KeyClaim

HOME = f"{PREFIX}/profile"
router = APIRouter(prefix=HOME, route_class=PortalRoute, include_in_schema=False)

# What the page says after a change (its ``done`` parameter).
DONE = {
    "password": "Your password is changed; every other session of yours has ended.",
    "two-factor-on": "Two-factor sign-in is on: from now on a sign-in asks for a code.",
    "two-factor-off": "Two-factor sign-in is off.",
    "revoked": "The API token is revoked: it no longer authenticates.",
    "signed-out": "Every other session of yours has ended.",
}
WRONG_CODE = "The code is wrong, or it was used already. Enter the code your app shows now."
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
ROLE_OPTIONS = [("", "My own role"), *((str(gid), name) for gid, name in GROUPS.items())]


@dataclass(frozen=True, slots=True)
class TokenRow:
    id: int
    name: str
    description: str
    role: str
    created: str
    expires: str
    last_used: str
    state: str


def _when(value: str | None, empty: str) -> str:
    return value.replace("T", " ").rstrip("Z")[:16] + " UTC" if value else empty


def _token_row(token: ApiToken) -> TokenRow:
    state = "Revoked" if token.deleted else ("Expired" if token.expired else "Active")
    role = token.client_user.role
    return TokenRow(
        id=token.id,
        name=token.name or "",
        description=token.description or "",
        role=role.name if role is not None else "",
        created=_when(token.created, ""),
        expires=_when(token.exp_date, "Never"),
        last_used=_when(token.last_usage, "Never"),
        state=state,
    )


def _stamp(value: datetime) -> str:
    return _when(isoformat_z(value), "")


async def _own_tokens(portal: Portal) -> list[TokenRow]:
    caller = portal.caller
    found = await tokens.list_tokens(
        portal.db, caller, caller.account_id, TokenFilter(only_user_id=caller.user_id)
    )
    return [_token_row(t) for t in sorted(found, key=lambda t: t.id, reverse=True)]


async def _profile_page(
    portal: Portal,
    *,
    status: int = 200,
    notice: str = "",
    password_form: Form | None = None,
    token_form: Form | None = None,
    two_factor_form: Form | None = None,
) -> Response:
    if portal.user.kind is PortalKind.seller:
        return portal.page("Profile", "profile/seller.html", status=status)
    settings = app_state(portal.request.app).settings
    return portal.page(
        "Profile",
        "profile/index.html",
        status=status,
        notice=notice,
        name=portal.user.name,
        email=portal.user.email,
        two_factor_on=await two_factor.is_on(portal.db, portal.user.user_id),
        tokens=await _own_tokens(portal),
        sessions=[
            (_stamp(s.created_at), _stamp(s.last_seen_at), s.current)
            for s in await profile.sessions_of(
                portal.db, portal.user.user_id, portal.session_id, settings
            )
        ],
        password_form=password_form or Form(),
        token_form=token_form or Form(),
        two_factor_form=two_factor_form or Form(),
        role_options=ROLE_OPTIONS,
    )


def _users_only(portal: Portal) -> None:
    """The changes here are a user's; a seller has none of them (404, as for what one
    may not see)."""
    if portal.user.kind is PortalKind.seller:
        raise NotFound()


@router.get("")
async def profile_index(portal: AdminPage, done: str = "") -> Response:
    return await _profile_page(portal, notice=DONE.get(done, ""))


# --- the password ---------------------------------------------------------------------


@router.post("/password")
async def change_password(portal: AdminPage) -> Response:
    """The current password and the new one twice; the API's password rules. Every other
    session of the user ends; a wrong current password counts in the failed-
    authentication throttle."""
    _users_only(portal)
    form = await read_form(portal.request)
    if not form.errors and form.get("password") != form.get("password_again"):
        form.refuse({"password_again": "The two new passwords differ."})
    if form.ok:
        try:
            await profile.change_password(
                portal.db,
                portal.user.user_id,
                form.get("current_password"),
                form.get("password"),
                keep_session=portal.session_id,
            )
        except WrongPassword as wrong:
            await app_state(portal.request.app).throttle.failed(portal.request)
            form.refuse(errors_of(wrong))
        except ValidationError as refusal:
            form.refuse(errors_of(refusal))
    if not form.ok:
        return await _profile_page(portal, status=400, password_form=form)
    return see_other(f"{HOME}?done=password")


# --- two-factor sign-in -----------------------------------------------------------------


def _enrolment_page(portal: Portal, secret: str, form: Form, *, status: int = 200) -> Response:
    uri = two_factor.provisioning_uri(secret, portal.user.email)
    return portal.page(
        "Set up two-factor sign-in",
        "profile/two_factor.html",
        status=status,
        qr=Markup(two_factor.qr_svg(uri)),
        secret=two_factor.secret_groups(secret),
        form=form,
    )


@router.post("/two-factor")
async def start_two_factor(portal: AdminPage) -> Response:
    """A new secret, not in force until a code confirms it: its QR code and its text."""
    _users_only(portal)
    box = app_state(portal.request.app).secret_box
    try:
        secret = await two_factor.start_enrolment(portal.db, box, portal.user.user_id)
    except ValidationError as refusal:
        form = Form().refuse(errors_of(refusal))
        return await _profile_page(portal, status=400, two_factor_form=form)
    return _enrolment_page(portal, secret, Form())


@router.post("/two-factor/confirm")
async def confirm_two_factor(portal: AdminPage) -> Response:
    """The first code from the app turns two-factor sign-in on; a wrong one shows the
    same secret again (it is not in force yet)."""
    _users_only(portal)
    box = app_state(portal.request.app).secret_box
    form = await read_form(portal.request)
    user_id = portal.user.user_id
    if await two_factor.confirm_enrolment(portal.db, box, user_id, form.get("one_time_password")):
        return see_other(f"{HOME}?done=two-factor-on")
    secret = await two_factor.pending_secret(portal.db, box, user_id)
    if secret is None:  # confirmed meanwhile, or never started: the profile says which
        return see_other(HOME)
    form.refuse({"one_time_password": WRONG_CODE})
    return _enrolment_page(portal, secret, form, status=400)


@router.post("/two-factor/off")
async def turn_off_two_factor(portal: AdminPage) -> Response:
    """Needs a current code or the password; a wrong one counts in the failed-
    authentication throttle."""
    _users_only(portal)
    state = app_state(portal.request.app)
    form = await read_form(portal.request)
    user_id = portal.user.user_id
    code, password = form.get("one_time_password").strip(), form.get("current_password")
    if not code and not password:
        form.refuse({FORM: "Enter a code from your app, or your password."})
    elif code:
        if not await two_factor.check_code(portal.db, state.secret_box, user_id, code):
            form.refuse({"one_time_password": WRONG_CODE})
    elif not await profile.verify_own_password(portal.db, user_id, password):
        form.refuse({"current_password": profile.WRONG_CURRENT})
    if not form.ok:
        if form.errors.keys() != {FORM}:
            await state.throttle.failed(portal.request)
        return await _profile_page(portal, status=400, two_factor_form=form)
    await two_factor.turn_off(portal.db, user_id)
    return see_other(f"{HOME}?done=two-factor-off")


# --- API tokens -------------------------------------------------------------------------


def _token_body(form: Form) -> TokenCreate | None:
    expires = form.get("exp_date").strip()
    if expires and not _DATE.fullmatch(expires):
        form.refuse({"exp_date": "A date as YYYY-MM-DD, or nothing (never expires)."})
    role = form.get("role").strip()
    values = {
        "name": form.get("name"),
        "description": form.text_or_none("description"),
        # The token expires at the end of that day (UTC).
        "exp_date": f"{expires}T23:59:59Z" if expires else None,
        "client_user": {"role": {"id": role} if role else None},
    }
    body = parse(TokenCreate, values, form)
    for name in ("client_user", "client_user.role"):
        if name in form.errors:
            form.errors.setdefault("role", form.errors.pop(name))
    return body


@router.post("/tokens")
async def create_api_token(portal: AdminPage) -> Response:
    """A new API token of the user's own, with the API's rules; its secret is shown on
    the answer's page, once: only its hash is kept."""
    _users_only(portal)
    form = await read_form(portal.request)
    body = _token_body(form)
    if body is not None:
        caller = portal.caller
        claim = KeyClaim(portal.request, caller.account_id, None, "")
        try:
            created = await tokens.create_token(
                portal.db, portal.actor, caller.account_id, body, claim
            )
        except ValidationError as refusal:
            form.refuse(errors_of(refusal))
            for name in ("client_user", "client_user.role"):
                if name in form.errors:
                    form.errors.setdefault("role", form.errors.pop(name))
        else:
            return portal.page(
                "API token created",
                "profile/token_created.html",
                token=created.token,
                row=_token_row(created),
            )
    return await _profile_page(portal, status=400, token_form=form)


@router.post("/tokens/{token_id}/revoke")
async def revoke_api_token(portal: AdminPage, token_id: Int32) -> Response:
    """Revokes one of the user's own tokens (another's id, whoever's, is the 404 page)."""
    _users_only(portal)
    caller = portal.caller
    found = await tokens.get_token(portal.db, caller, caller.account_id, token_id)
    if found.client_user.user_id != caller.user_id:
        raise NotFound(tokens.TOKEN_NOT_FOUND)
    await tokens.delete_token(portal.db, portal.actor, caller.account_id, token_id)
    return see_other(f"{HOME}?done=revoked")


# --- sessions ---------------------------------------------------------------------------


@router.post("/sessions/end-others")
async def sign_out_other_sessions(portal: AdminPage) -> Response:
    """Ends every session of the user but this one."""
    _users_only(portal)
    await sessions.end_other_sessions(portal.db, portal.user.user_id, portal.session_id)
    return see_other(f"{HOME}?done=signed-out")
