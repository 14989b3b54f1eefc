"""The application's routes, tried per path only where the path can match.

Starlette and FastAPI try a request against every route in table order until one
matches. The addendum list sits 42nd of about 120 routes, and walking past the 41
before it was about a tenth of a list request's instructions (counted with valgrind;
docs/performance.md, "2026-11-27 (late)"), as it is for any route late in the table.

``RouteIndex`` takes the router's place as its ASGI entry: for an HTTP request it
works out once per path which routes' path patterns match it, and lets FastAPI's own
dispatch (``APIRouter.app``) run over those routes only, in table order. That is the
same answer: a route whose pattern does not match the path can neither match it nor
answer 405 for it, so the first route that matches, or that matches the path but not
the method, is the same one. Whatever the index cannot judge goes to the whole router
as before: a request that no route's pattern matches (404, or the redirect to the path
with or without its trailing slash), a root path, a WebSocket, the lifespan, and any
table holding a route that is neither a ``Route`` nor a ``Mount`` (a ``Host``, say,
which matches by header).
"""

from __future__ import annotations

import copy
from functools import lru_cache

from fastapi.routing import APIRouter
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

# What is kept: the latest 4,096 paths of up to 256 characters. A path is the client's
# to choose, so a flood of long distinct ones must not hold more than a megabyte; a
# longer path is worked out anew each time (as the whole table would walk it).
PATHS_KEPT = 4096
KEPT_PATH_LENGTH = 256


class RouteIndex:
    """The ASGI entry of ``router`` (its ``middleware_stack``): see the module."""

    def __init__(self, router: APIRouter) -> None:
        self._router = router
        # By the routes' ids (a route compares by value, unhashable): each router kept
        # here holds its routes, so no id is reused while its key is.
        self._narrowed: dict[tuple[int, ...], APIRouter] = {}
        self._for_path = lru_cache(maxsize=PATHS_KEPT)(self._router_for)

    def _router_for(self, path: str, table_size: int) -> APIRouter | None:
        """The router to try ``path`` on: the whole one's copy holding only the routes
        whose pattern matches it, or None when the whole router is to answer."""
        patterned = [r for r in self._router.routes if isinstance(r, (Route, Mount))]
        if len(patterned) != len(self._router.routes):
            return None
        matching = tuple(r for r in patterned if r.path_regex.match(path))
        if not matching:
            return None
        key = tuple(map(id, matching))
        narrowed = self._narrowed.get(key)
        if narrowed is None:
            narrowed = copy.copy(self._router)
            narrowed.routes = list(matching)
            self._narrowed[key] = narrowed
        return narrowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            # The table's size keys the cache: a route added later is seen.
            path, size = scope["path"], len(self._router.routes)
            if len(path) <= KEPT_PATH_LENGTH:
                narrowed = self._for_path(path, size)
            else:
                narrowed = self._router_for(path, size)
            if narrowed is not None:
                # What reads the router from the scope (url_for) sees the whole table.
                scope.setdefault("router", self._router)
                await narrowed.app(scope, receive, send)
                return
        await self._router.app(scope, receive, send)


def install(router: APIRouter) -> None:
    """Puts the index in front of ``router``'s routes (Starlette calls a router's
    ``middleware_stack``, which is its ``app`` when it has no middleware of its own)."""
    router.middleware_stack = RouteIndex(router)
