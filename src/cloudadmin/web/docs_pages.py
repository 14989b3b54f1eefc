"""/docs (Swagger UI) and /redoc (ReDoc), served with every asset from installed packages.

FastAPI's own pages load their scripts, styles, favicon and fonts from public CDNs, so they
stay blank where the service has no way out. Here the scripts and styles come from the
`fastapi-offline` distribution (which ships Swagger UI's bundle and ReDoc's standalone
build) and the favicon from this package, all under one mount: the pages name no other host.
"""

from __future__ import annotations

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


def _prefix(request: Request) -> str:
    # Behind a proxy that serves the API under a path prefix, the pages' links carry it.
    return str(request.scope.get("root_path", "")).rstrip("/")


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    root = _prefix(request)
    return get_swagger_ui_html(
        openapi_url=f"{root}{OPENAPI_PATH}",
        title=f"{TITLE} - Swagger UI",
        swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.svg",
        oauth2_redirect_url=None,
        # Swagger UI would otherwise send the document to a public validator for a badge.
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    root = _prefix(request)
    return get_redoc_html(
        openapi_url=f"{root}{OPENAPI_PATH}",
        title=f"{TITLE} - ReDoc",
        redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.svg",
        with_google_fonts=False,
    )
