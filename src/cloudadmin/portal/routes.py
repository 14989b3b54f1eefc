"""The portal's routes under /portal (docs/portal.md): signing in, the start page and
one router per section. Every route is a PortalRoute (portal/context.py)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.portal import home, not_found, sign_in_pages
from cloudadmin.portal.context import PREFIX
from cloudadmin.portal.pages import PortalHeadersMiddleware as PortalHeadersMiddleware
from cloudadmin.portal.pages import static_files as static_files  # app.py mounts it
from cloudadmin.portal.sections import (
    accounts,
    activity,
    billing,
    billing_reports,
    events,
    profile,
    seller_password,
    users,
    vendor,
)

STATIC_PATH = f"{PREFIX}/static"

router = APIRouter(include_in_schema=False)
for part in (
    sign_in_pages,
    home,
    accounts,
    users,
    seller_password,
    activity,
    vendor,
    billing_reports,
    billing,
    events,
    profile,
):
    router.include_router(part.router)

# What no page serves is the portal's 404 page: app.py adds these after every other
# route and after the static files' mount.
fallback_routes = not_found.routes
