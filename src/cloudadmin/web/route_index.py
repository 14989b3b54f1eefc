"""The application's routes, tried per path only where the path can match.

Starlette and FastAPI try a request against every route in table order until one
matches. The addendum list sits 42nd of about 120 routes, and walking past the 41
before it was about a tenth of a list request's instructions (counted with valgrind;
docs/architecture.md, "Routing by path, and dependencies without the solver"), as it is
for any route late in the table.

``RouteIndex`` takes the router's place as its ASGI entry: for an HTTP request it
works out once per path which routes' path patterns match it, and lets FastAPI's own
dispatch (``APIRouter.app``) run over those routes only, in table order. That is the
same answer: a route whose pattern does not match the path can neither match it nor
answer 405 for it, so the first route that matches, or that matches the path but not
the method, is the same one. Whatever the index cannot judge goes to the whole router
as before: a request that no route's pattern matches (404, or the redirect to the path
with or without its trailing slash), a root path, a WebSocket, the lifespan, and any
table holding a route that is neither a ``Route`` nor a ``Mount`` (a ``Host``, say,
which matches by header). The last one turns the index off for every request, so it is
said once, as a warning of the ``cloudadmin.web.route_index`` logger, when the index is
installed over such a table or first meets one; an index at work logs nothing.

It reads Starlette's and FastAPI's internals: the router's ``middleware_stack`` and
``app``, and each route's ``path_regex``. pyproject.toml caps their minor versions, and
tests/web/test_route_index.py compares the index's answers with the whole table's.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from functools import lru_cache

from fastapi.routing import APIRouter
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

# What is kept: the latest 4,096 paths of up to 256 characters. A path is the client's
# to choose, so a flood of long distinct ones must not hold more than a megabyte; a
# longer path is worked out anew each time (as the whole table would walk it).
PATHS_KEPT = 4096
KEPT_PATH_LENGTH = 256

log = logging.getLogger("cloudadmin.web.route_index")


class RouteIndex:
    """The ASGI entry of ``router`` (its ``middleware_stack``): see the module."""

    def __init__(self, router: APIRouter) -> None:
        self._router = router
        # By the routes' ids (a route compares by value, unhashable): each router kept
        # here holds its routes, so no id is reused while its key is.
        self._narrowed: dict[tuple[int, ...], APIRouter] = {}
        self._for_path = lru_cache(maxsize=PATHS_KEPT)(self._router_for)
        self._said_aside = False
        self._patterned(self._router.routes)  # says at start if the index steps aside

    def _patterned(self, routes: Sequence[BaseRoute]) -> list[Route | Mount] | None:
        """The table's routes, or None when one is neither a ``Route`` nor a ``Mount``:
        the first time, a warning says that the whole router answers every request."""
        patterned = [r for r in routes if isinstance(r, (Route, Mount))]
        if len(patterned) == len(routes):
            return patterned
        if not self._said_aside:
            self._said_aside = True
            others = {type(r).__name__ for r in routes if not isinstance(r, (Route, Mount))}
            log.warning(
                "route index off: the whole route table answers every request, for it "
                "holds routes not matched by path alone: %s",
                ", ".join(sorted(others)),
            )
        return None

    def _router_for(self, path: str, table_size: int) -> APIRouter | None:
        """The router to try ``path`` on: the whole one's copy holding only the routes
        whose pattern matches it, or None when the whole router is to answer."""
        patterned = self._patterned(self._router.routes)
        if patterned is None:
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
