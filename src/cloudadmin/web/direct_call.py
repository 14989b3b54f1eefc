"""A route whose handler needs nothing but the request, called without FastAPI's solver.

FastAPI solves a route's dependencies anew for every request: it walks the dependant
tree, works out cache keys, scopes and kinds of callable, and builds the endpoint's
context for error messages. For the addendum list, whose three dependencies each take
the request alone, that bookkeeping was 12 % of the request's instructions (counted
with valgrind: 2.37 against 2.08 million; docs/architecture.md, "Routing by path, and
dependencies without the solver").

A route qualifies only when FastAPI would do nothing else for it: every parameter of
its endpoint is the ``Request`` or a dependency that is a coroutine function of the
request alone (no sub-dependency, no ``yield``, no scopes, cached), it has no body,
and its endpoint is a coroutine function declared to return a ``Response``, which
FastAPI passes through as it is. Each dependency is awaited once a request, in the
order FastAPI solves them, and its exceptions propagate as they would from the solver.
Any other route, or any request while dependency overrides are set, goes through
FastAPI's own handler.

It reads FastAPI's internals: a route's ``Dependant`` (its calls, names, cache and scope
flags) and ``get_typed_return_annotation``. pyproject.toml caps FastAPI's and
Starlette's minor versions, and tests/web/test_direct_call_routes.py asks every route
called directly a set of requests through this and through FastAPI's solver, and
compares the bytes.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_typed_return_annotation
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Awaitable[Response]]


def _call_of_request(dependant: Dependant) -> Callable[..., Any] | None:
    """The dependency's callable if it is a coroutine function of the request alone."""
    call = dependant.call
    if (
        call is None
        or not dependant.use_cache
        or dependant.dependencies
        or dependant.own_oauth_scopes
        or dependant.request_param_name is None
        or not _is_coroutine_function(call)
    ):
        return None
    if _parameter_names(call) != [dependant.request_param_name]:
        return None
    return call


def _is_coroutine_function(call: Callable[..., Any]) -> bool:
    # A callable instance (a QueryModel) is a coroutine function by its __call__.
    if inspect.isfunction(call) or inspect.ismethod(call):
        return inspect.iscoroutinefunction(call)
    return inspect.iscoroutinefunction(getattr(call, "__call__", None))  # noqa: B004


def _parameter_names(call: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(call).parameters)


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    returns = get_typed_return_annotation(endpoint)
    return inspect.isclass(returns) and issubclass(returns, Response)


def direct_handler(route: APIRoute, solved: Handler) -> Handler | None:
    """The route's handler without the solver, or None when the route does not qualify.
    ``solved`` is FastAPI's handler of the route, used while overrides are set."""
    dependant = route.dependant
    endpoint = dependant.call
    if (
        endpoint is None
        or route.body_field is not None
        or not inspect.iscoroutinefunction(endpoint)
        or not _returns_response(endpoint)
    ):
        return None
    steps: list[tuple[str, Callable[..., Any], str]] = []
    named = {dependant.request_param_name} - {None}
    for dependency in dependant.dependencies:
        call = _call_of_request(dependency)
        if call is None or dependency.name is None:
            return None
        steps.append((dependency.name, call, dependency.request_param_name or ""))
        named.add(dependency.name)
    # Every parameter accounted for: nothing from the path, query, headers or body.
    if set(_parameter_names(endpoint)) != named:
        return None
    request_name = dependant.request_param_name
    overrides = route.dependency_overrides_provider

    async def handle(request: Request) -> Response:
        if overrides is not None and getattr(overrides, "dependency_overrides", None):
            return await solved(request)
        values: dict[str, Any] = {request_name: request} if request_name else {}
        done: dict[Any, Any] = {}
        for name, call, param in steps:
            # FastAPI's cache: a callable depended on twice is awaited once.
            if call in done:
                values[name] = done[call]
            else:
                values[name] = done[call] = await call(**{param: request})
        response: Response = await endpoint(**values)
        return response

    return handle
