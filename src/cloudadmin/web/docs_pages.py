"""/docs (Swagger UI) and /redoc (ReDoc), served with every asset from installed packages.

FastAPI's own pages load their scripts, styles, favicon and fonts from public CDNs, so they
stay blank where the service has no way out. Here the scripts and styles come from the
`fastapi-offline` distribution (which ships Swagger UI's bundle and ReDoc's standalone
build) and the favicon from this package, all under one mount: the pages name no other host.
Their scripts still hold a few of their own (ReDoc's footer shows its maker's logo from a
CDN), so each page also carries a Content-Security-Policy that lets it fetch only from
this service: the browser does not even try another host.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS_PATH = "/docs-assets"
OPENAPI_PATH = "/openapi.json"
TITLE = "cloudadmin"

router = APIRouter(include_in_schema=False)


def assets() -> StaticFiles:
    """The mount for ASSETS_PATH: a name is looked up in each package directory in turn."""
    return StaticFiles(packages=[("fastapi_offline", "static"), ("cloudadmin.web", "docs_assets")])


_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def _same_origin_only(page: HTMLResponse) -> HTMLResponse:
    """Lets the page load and send nothing but to this service, and run only the inline
    script it was served with (Swagger UI's start-up), by that script's hash."""
    hashes = [
        f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(bytes(page.body).decode())
    ]
    page.headers["Content-Security-Policy"] = "; ".join(
        [
            "default-src 'self'",
            " ".join(["script-src 'self'", *hashes]),
            # Both UIs set styles from their scripts and draw icons from data: URLs.
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            # ReDoc's search runs in a worker that it builds from a blob: URL.
            "worker-src 'self' blob:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "frame-ancestors 'self'",
        ]
    )
    return page


def _page(
    request: Request,
    render: Callable[..., HTMLResponse],
    ui: str,
    assets: dict[str, str],
    **options: Any,
) -> HTMLResponse:
    """The page ``render`` (FastAPI's HTML of one UI) makes for the document, titled after
    ``ui``, its ``assets`` (keyword -> file under ASSETS_PATH) linked from this service."""
    # Behind a proxy that serves the API under a path prefix, the pages' links carry it.
    root = str(request.scope.get("root_path", "")).rstrip("/")
    links = {keyword: f"{root}{ASSETS_PATH}/{file}" for keyword, file in assets.items()}
    page = render(openapi_url=f"{root}{OPENAPI_PATH}", title=f"{TITLE} - {ui}", **links, **options)
    return _same_origin_only(page)


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    assets = {
        "swagger_js_url": "swagger-ui-bundle.js",
        "swagger_css_url": "swagger-ui.css",
        "swagger_favicon_url": "favicon.svg",
    }
    # Swagger UI would otherwise send the document to a public validator for a badge.
    return _page(
        request,
        get_swagger_ui_html,
        "Swagger UI",
        assets,
        oauth2_redirect_url=None,
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    assets = {"redoc_js_url": "redoc.standalone.js", "redoc_favicon_url": "favicon.svg"}
    return _page(request, get_redoc_html, "ReDoc", assets, with_google_fonts=False)
