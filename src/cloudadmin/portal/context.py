"""A portal request's life (docs/portal.md, "A page's request"): the request owns one
transaction, the signed-in user is a Caller as the services know it, every change is in
the activity log, and every answer carries the security headers.

A page declares what it needs as a dependency: ``AdminPage`` (an operator, a reseller's
user or a seller), or ``SignedIn`` with the kinds it serves. The route class does the
rest: CSRF on every state-changing request (403, nothing written), the service's typed
errors as pages (another tenant's id is the 404 page), commit on success.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any

from fastapi import Depends
from fastapi.routing import APIRoute
from markupsafe import Markup
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.request_db import ChangeDatabase, ReadDatabase, RequestDatabase
from cloudadmin.db.types import utcnow
from cloudadmin.errors import (
    ApiError,
    InternalError,
    NotFound,
    PermissionDenied,
    ValidationError,
)
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.sign_in.credentials import (
    PortalKind,
    PortalUser,
)
from cloudadmin.iam.sign_in.signed_in import signed_in
from cloudadmin.portal import navigation
from cloudadmin.portal.pages import fragment, page, refused, secure
from cloudadmin.web.app_state import app_state
from cloudadmin.web.direct_call import direct_handler
from cloudadmin.web.error_render import to_api_error
from cloudadmin.web.request_log import LoggedRequest
from cloudadmin.web.text_guard import unstorable

log = logging.getLogger("cloudadmin.portal")

PREFIX = "/portal"
SESSION_COOKIE = "portal_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
_READS = {"GET", "HEAD"}
# The users of the Admin Portal; a client's user gets the "not here" page.
ADMIN_KINDS = frozenset({PortalKind.operator, PortalKind.reseller, PortalKind.seller})


class PageAnswer(Exception):
    """A page's request ends with this answer, having written nothing (its transaction
    is rolled back): a refusal. With ``commit``, what the request did so far is kept:
    the sign-in page after an expired session, whose row is deleted."""

    def __init__(self, response: Response, *, commit: bool = False) -> None:
        super().__init__(response.status_code)
        self.response = response
        self.commit = commit


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def forbidden_form() -> Response:
    return refused(
        "Refused",
        "The form was not sent from this portal's own page, or its page is too old. "
        "Load the page again and repeat.",
        status=403,
    )


@dataclass
class Portal:
    """A signed-in user's request: its transaction (``db``), who it is (``user``), the
    same user as the services' ``caller`` and ``actor``, and what a page needs to
    render (the CSRF token, the navigation)."""

    request: Request
    database: RequestDatabase
    user: PortalUser
    caller: Caller
    csrf_token: str
    session_id: str
    values: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def db(self) -> AsyncSession:
        """The request's ORM session, opened on first use on the request's connection: a
        page whose services run on the connection alone (the addendum browser) never
        pays for one."""
        return self.database.bound_session()

    @property
    def actor(self) -> Actor:
        request = self.request
        return Actor(
            caller=self.caller,
            source_ip=request.client.host if request.client else "",
            user_agent=request.headers.get("user-agent", "")[:512],
            request_id=str(getattr(request.state, "request_id", "")),
        )

    @property
    def is_htmx(self) -> bool:
        """An htmx request that swaps a part of the page, not the whole (a history
        restore, after going back to a page htmx no longer holds, wants the whole)."""
        headers = self.request.headers
        return (
            headers.get("HX-Request") == "true"
            and headers.get("HX-History-Restore-Request") != "true"
        )

    def navigation(self) -> Markup:
        return navigation.render(self.user, self.csrf_token, self.request.url.path)

    def page(
        self,
        title: str,
        template: str,
        /,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        **values: Any,
    ) -> HTMLResponse:
        """The whole page: ``template`` rendered with ``values`` (and ``csrf_token``,
        ``user``) inside the layout and the navigation."""
        content = fragment(template, csrf_token=self.csrf_token, user=self.user, **values)
        return page(
            title,
            content,
            status=status,
            csrf_token=self.csrf_token,
            navigation=self.navigation(),
            headers=headers,
        )

    def part(self, template: str, /, *, status: int = 200, **values: Any) -> HTMLResponse:
        """Only ``template`` (for an htmx request, which swaps it into the page)."""
        content = fragment(template, csrf_token=self.csrf_token, user=self.user, **values)
        return HTMLResponse(content, status_code=status)

    def page_or_part(
        self, title: str, template: str, part: str, /, *, status: int = 200, **values: Any
    ) -> HTMLResponse:
        """``part`` for htmx, which swaps it in; the whole page otherwise (without
        JavaScript, a link or a form loads the page)."""
        if self.is_htmx:
            return self.part(part, status=status, **values)
        return self.page(title, template, status=status, **values)


def _database(request: Request) -> RequestDatabase:
    db: RequestDatabase = request.state.db
    return db


async def _presented_csrf(request: Request) -> str:
    header = request.headers.get(CSRF_HEADER)
    if header:
        return header
    ctype = request.headers.get("content-type", "")
    if ctype.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        return value if isinstance(value, str) else ""
    return ""


async def signed_in_user(request: Request, kinds: frozenset[PortalKind]) -> Portal:
    """The request's signed-in user, or the page that answers instead: the sign-in page
    without a live session, 403 for a state-changing request without the session's
    CSRF token (before anything is written), the "not here" page for a user the page
    does not serve."""
    settings = app_state(request.app).settings
    database = _database(request)
    session_id = request.cookies.get(SESSION_COOKIE, "")
    found = await signed_in(await database.connection(), session_id, settings, database.session)
    if found is None:
        target = f"{PREFIX}/sign-in"
        if request.method in _READS and request.url.path != f"{PREFIX}/":
            target += "?" + _next_param(request)
        raise PageAnswer(see_other(target), commit=True)
    row, user = found.session, found.user
    if request.method not in _READS and not sessions.csrf_valid(
        row, await _presented_csrf(request)
    ):
        raise PageAnswer(forbidden_form())
    if user.kind not in kinds:
        content = fragment("not_here.html", email=user.email)
        raise PageAnswer(
            page(
                "Not part of the Admin Portal",
                content,
                status=403,
                csrf_token=row.csrf_token,
                navigation=navigation.render(user, row.csrf_token, request.url.path),
            )
        )
    request.state.caller = found.caller
    return Portal(request, database, user, found.caller, row.csrf_token, session_id)


def _next_param(request: Request) -> str:
    from urllib.parse import urlencode

    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return urlencode({"next": target})


async def admin_page(request: Request) -> Portal:
    return await signed_in_user(request, ADMIN_KINDS)


AdminPage = Annotated[Portal, Depends(admin_page)]


def only(*kinds: PortalKind) -> Callable[[Request], Coroutine[Any, Any, Portal]]:
    """A dependency for a page that serves only these kinds (a seller's user may not open
    vendor settings, say): others get the 404 page, as for what they may not see."""
    allowed = frozenset(kinds)

    async def dependency(request: Request) -> Portal:
        portal = await admin_page(request)
        if portal.user.kind not in allowed:
            raise NotFound()
        return portal

    return dependency


# The pages of operators and resellers; a seller gets the 404 page (docs/access.md,
# "The Admin Portal").
OperatorOrReseller = Annotated[Portal, Depends(only(PortalKind.operator, PortalKind.reseller))]


def error_page(request: Request, exc: ApiError) -> Response:
    """A service's typed error as a page: 404 (another tenant's id, or none), 403, or
    the error's own status with its message."""
    if isinstance(exc, NotFound):
        heading, text = "Not found", "There is nothing here, or nothing you may see."
    elif isinstance(exc, PermissionDenied):
        heading, text = "Not allowed", "Your account may not do this."
    else:
        heading, text = "Refused", exc.message
    content = fragment(
        "refused.html", heading=heading, text=text, link=f"{PREFIX}/", link_text="To the start"
    )
    headers = {k: v for k, v in exc.headers.items() if k.lower() == "retry-after"}
    return page(heading, content, status=exc.status_code, headers=headers or None)


class PortalRoute(APIRoute):
    """Every portal route: one transaction a request, committed when its answer is a
    success (below 400) and rolled back otherwise; a state-changing request of a signed-in
    user gets its activity-log row (action ``portal.<route name>``, no token), in the
    same transaction, or after a rollback in one of its own, marked reverted; the
    security headers on every answer.

    A page whose dependencies each take the request alone (``AdminPage``, ``only(...)``)
    is called without FastAPI's dependency solver, as the API's routes are
    (web/direct_call.py; tests/portal/test_direct_call_pages.py compares the bytes)."""

    calls_directly = False

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        solved = super().get_route_handler()
        direct = direct_handler(self, solved)
        self.calls_directly = direct is not None
        handle = direct or solved
        action = f"portal.{self.name}"

        async def portal_handler(request: Request) -> Response:
            state = app_state(request.app)
            requested_at = utcnow()
            async with state.turns.turn():
                # A page that only reads runs without a transaction, as the API's reads
                # do (docs/architecture.md): no BEGIN and COMMIT, no write lock on SQLite.
                db: RequestDatabase = (
                    ReadDatabase(state.read_engine, state.read_sessionmaker)
                    if request.method in _READS
                    else ChangeDatabase(state.sessionmaker)
                )
                request.state.db = db
                try:
                    response = await _respond(request, db, handle, action, requested_at)
                finally:
                    await db.close()
                    # A form's uploads are spooled to temporary files: closed here, with
                    # the request, rather than left to the garbage collector.
                    await request.close()
            return secure(response)

        return portal_handler


async def _respond(
    request: Request,
    db: RequestDatabase,
    handle: Callable[[Request], Awaitable[Response]],
    action: str,
    requested_at: Any,
) -> Response:
    try:
        # Text no column can store (NUL, a lone surrogate) in the path is the 400 page
        # naming it, as the API answers it, before any statement sees it; in the query,
        # a list's filters, it is the field's message (forms.query_form).
        refuse_unstorable_path(request)
        response = await handle(request)
    except PageAnswer as answer:
        await (db.commit() if answer.commit else db.rollback())
        return answer.response
    except Exception as exc:
        response = _failure_page(request, exc)
    caller: Caller | None = getattr(request.state, "caller", None)
    logged = caller is not None and request.method not in _READS
    if response.status_code < 400:
        try:
            if logged and caller is not None:
                row = LoggedRequest(
                    request, caller, action, requested_at, response.status_code, reverted=False
                )
                await app_state(request.app).request_log(await db.connection(), row)
            await db.commit()
            return response
        except Exception as exc:  # a uniqueness race lost at commit, say
            response = _failure_page(request, exc)
    await db.rollback()
    if logged and caller is not None:
        try:
            row = LoggedRequest(
                request, caller, action, requested_at, response.status_code, reverted=True
            )
            await app_state(request.app).request_log(await db.connection(), row)
            await db.commit()
        except Exception:  # the log must never turn an answer into a 500
            log.exception("could not write the activity log entry")
    return response


def refuse_unstorable_path(request: Request) -> None:
    for key, value in request.path_params.items():
        if isinstance(value, str) and (message := unstorable(value)):
            raise ValidationError(fields={key: [message]})


def _failure_page(request: Request, exc: BaseException) -> Response:
    """Any exception as the API would answer it (web/error_render.py), shown as a page:
    a lost uniqueness race is a 409, an unreachable database a 503; only a fault of the
    portal itself is a 500, and it is logged."""
    error = to_api_error(exc)
    if isinstance(error, InternalError) and not isinstance(exc, ApiError):
        log.error("portal page failed: %s %s", request.method, request.url.path, exc_info=exc)
        error = InternalError("The page could not be shown. Nothing was changed.")
    return error_page(request, error)
