"""The portal's pages: Jinja2 templates (every value HTML-escaped unless it is a part
already rendered), and the headers every portal answer carries (docs/portal.md,
"Security headers")."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# No inline script or style anywhere: every script and stylesheet is a file of ours.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
# Static files may be cached; everything else holds the same.
STATIC_HEADERS = {k: v for k, v in SECURITY_HEADERS.items() if k != "Cache-Control"}


def secure(response: Response, headers: dict[str, str] = SECURITY_HEADERS) -> Response:
    for name, value in headers.items():
        response.headers[name] = value
    return response


class PortalStatic(StaticFiles):
    """The portal's stylesheet and vendored htmx, with the security headers too."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            response = await super().get_response(path, scope)
        except HTTPException as missing:  # no such file: a page, not the API's JSON body
            content = fragment(
                "refused.html",
                heading="Not found",
                text="There is no such file.",
                link="/portal/",
                link_text="To the start",
            )
            return secure(page("Not found", content, status=missing.status_code))
        return secure(response, STATIC_HEADERS)


def static_files() -> StaticFiles:
    return PortalStatic(packages=[("cloudadmin.portal", "static")])


# Autoescaping on for every template; an undefined name is an error, not an empty string.
_TEMPLATES = Environment(
    loader=PackageLoader("cloudadmin.portal", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    auto_reload=False,
)


def fragment(template: str, /, **values: Any) -> Markup:
    """A template rendered with ``values``, each HTML-escaped (a ``Markup`` value, a part
    already rendered, is kept as it is)."""
    return Markup(_TEMPLATES.get_template(template).render(**values))


def page(
    title: str,
    content: Markup,
    *,
    status: int = 200,
    csrf_token: str | None = None,
    navigation: Markup = Markup(""),
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """A whole page around ``content`` (already rendered). With a session's CSRF token,
    htmx sends it as the X-CSRF-Token header of every request (hx-headers on <body>)."""
    head, tail = _layout(title, csrf_token, navigation)
    # str.join, not +: Markup's + would escape the layout's plain text.
    return HTMLResponse("".join((head, content, tail)), status_code=status, headers=headers)


# What stands in for the content while the layout is rendered around it.
_CONTENT = Markup("<!--content-->")


@lru_cache(maxsize=1024)
def _layout(title: str, csrf_token: str | None, navigation: Markup) -> tuple[str, str]:
    """The layout before and after a page's content. It is the same for every page of
    one title, person and section: rendered once, kept for the sessions in use (bounded;
    a process's own memo, as the navigation's)."""
    hx_headers = None if csrf_token is None else json.dumps({"X-CSRF-Token": csrf_token})
    text = fragment(
        "page.html", title=title, hx_headers=hx_headers, navigation=navigation, content=_CONTENT
    )
    head, tail = text.split(_CONTENT)
    return str(head), str(tail)


def refused(
    heading: str, text: str, *, status: int, headers: dict[str, str] | None = None
) -> HTMLResponse:
    content = fragment(
        "refused.html",
        heading=heading,
        text=text,
        link="/portal/sign-in",
        link_text="To the sign-in page",
    )
    return page(heading, content, status=status, headers=headers)


class PortalHeadersMiddleware:
    """Pure ASGI: an answer under /portal that no portal route made (the body limit's 413,
    refused before routing) still gets the security headers a portal answer carries;
    those a route set are left as they are."""

    def __init__(self, app: ASGIApp, prefix: str = "/portal") -> None:
        self.app = app
        self.prefix = prefix
        self.headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                missing = [(k, v) for k, v in self.headers if k not in present]
                message["headers"] = [*message.get("headers", []), *missing]
            await send(message)

        await self.app(scope, receive, send_secured)
