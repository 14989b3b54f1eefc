"""The portal's routes under /portal (docs/portal.md): signing in, the start page and
each section's modules, in the order their routes are tried. Every route is a
PortalRoute (portal/context.py)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from cloudadmin.portal import home, not_found, password_reset_pages, sign_in_pages
from cloudadmin.portal.context import PREFIX
from cloudadmin.portal.pages import PortalHeadersMiddleware as PortalHeadersMiddleware
from cloudadmin.portal.pages import static_files as static_files  # app.py mounts it
from cloudadmin.portal.sections import (
    accounts,
    accounts_edit,
    activity,
    billing,
    billing_reports,
    events,
    profile,
    seller_password,
    users,
    users_sellers,
    vendor_branding,
    vendor_mail,
    vendor_notifications,
)

STATIC_PATH = f"{PREFIX}/static"

# In the order they are tried: a module whose fixed paths a later one's parameter would
# also match comes first (/users/sellers before /users/{user_id}, the accounts' list
# pages before /accounts/{client_id}).
PARTS = (
    sign_in_pages,
    password_reset_pages,
    home,
    accounts,
    accounts_edit,
    users_sellers,
    users,
    seller_password,
    activity,
    vendor_branding,
    vendor_mail,
    vendor_notifications,
    billing_reports,
    billing,
    events,
    profile,
)

router = APIRouter(include_in_schema=False)
for part in PARTS:
    router.routes.extend(part.router.routes)
# app.py puts these routes straight into the application's table, whose route index
# (web/route_index.py) reads each route's pattern: a router included in a section's
# router (include_router keeps it as a router of its own) would switch the index off for
# the whole API. Fail at import instead.
_nested = [route for route in router.routes if not isinstance(route, APIRoute)]
if _nested:
    raise TypeError(f"portal routes must be APIRoutes, not included routers: {_nested}")

# What no page serves is the portal's 404 page: app.py adds these after every other
# route and after the static files' mount.
fallback_routes = not_found.routes
