"""What the portal answers for a path under /portal that no page serves (and a method a
page does not take): the portal's 404 page with its security headers, not the API's
JSON body. Included after every other portal router (portal/routes.py).

Plain Starlette routes, not PortalRoutes: no page is behind them, so they need no
session, no transaction and no activity-log row.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cloudadmin.errors import NotFound
from cloudadmin.portal.context import PREFIX, error_page, see_other
from cloudadmin.portal.pages import secure

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


async def portal_without_slash(request: Request) -> Response:
    return secure(see_other(f"{PREFIX}/"))


async def no_such_page(request: Request) -> Response:
    return secure(error_page(request, NotFound()))


routes = [
    Route(PREFIX, portal_without_slash, methods=["GET", "HEAD"]),
    Route(PREFIX + "/{rest:path}", no_such_page, methods=_METHODS),
]
