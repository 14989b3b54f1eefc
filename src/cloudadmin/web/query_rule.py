"""One rule for query parameters, on every operation: a parameter the operation does not
document is a 400 naming it (docs/api.md, "Query parameters").

The provider's framework (DRF) ignores such a parameter, but then a mistyped filter
(``stauts=paused``) answers the whole unfiltered list as if it were the filtered one,
which a script that acts on the answer cannot tell. The provider's SDK sends only the
parameters the provider documents, and every one of those that an operation we serve
takes is documented here too (tests/web/test_unknown_query_params.py), so the rule
refuses nothing the SDK sends.

The names an operation documents are worked out once, when its route is built: the
query parameters of its handler and of its dependencies (``Query()``), and the fields of
a query model (web/query_model.py), as the OpenAPI document lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from functools import cache
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import Request

from cloudadmin.web.deps import get_caller
from cloudadmin.web.query_model import QueryModel, query_model_parameters

UNKNOWN = "Unknown query parameter; this operation takes: {taken}."


@cache
def _model_names(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(p["name"] for p in query_model_parameters(model) if p["in"] == "query")


def _names(dependant: Dependant) -> Iterator[str]:
    for field in dependant.query_params:
        annotation = field.field_info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _model_names(annotation)  # FastAPI's Annotated[Model, Query()]
        else:
            yield field.alias
    if isinstance(dependant.call, QueryModel):
        model: type[BaseModel] = dependant.call.model
        yield from _model_names(model)
    for sub in dependant.dependencies:
        yield from _names(sub)


def documented_query(route: APIRoute) -> frozenset[str]:
    """The query parameters ``route`` documents (and takes)."""
    return frozenset(_names(route.dependant))


def unknown_query_guard(
    route: APIRoute, *, authenticates: bool
) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A check of a request's query names against what ``route`` documents: raises the
    400 of FastAPI's own validation (``RequestValidationError``, located ``("query",
    name)``) for each unknown name, in the query's order.

    On a route that ``authenticates``, the key is checked first, as it is before any
    other parameter's 400: a bad key is a 401, and a refused request of a valid key is
    logged (activity and access logs) with its caller."""
    known = documented_query(route)
    taken = ", ".join(sorted(known)) or "none"

    async def check(request: Request) -> None:
        query = request.scope.get("query_string", b"")
        if not query:  # the common request: nothing to parse
            return
        unknown = [name for name in dict.fromkeys(request.query_params) if name not in known]
        if unknown:
            if authenticates:
                await get_caller(request)  # the handler, which would check it, never runs
            raise RequestValidationError([_error(name, taken) for name in unknown])

    return check


def _error(name: str, taken: str) -> dict[str, Any]:
    return {
        "type": "extra_forbidden",
        "loc": ("query", name),
        "msg": UNKNOWN.format(taken=taken),
        "input": None,
    }
