"""A Pydantic model of query parameters, validated in one call.

FastAPI can take a model as ``Annotated[Model, Query()]``, but it walks the model's
fields and their annotations on every request: for the 29 filters of the addendum
list that cost more than the list's SQL (docs/billing.md, "Performance"). This
dependency reads the query string once and validates the model once; the errors are
the ones FastAPI raises (``RequestValidationError``, located ``("query", name)``), and
the OpenAPI parameters are the ones FastAPI would document for ``Query()``.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Generic, TypeVar

from fastapi import FastAPI, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from starlette.requests import Request

M = TypeVar("M", bound=BaseModel)


def _is_list(annotation: Any) -> bool:
    if typing.get_origin(annotation) in (list, tuple, set, frozenset):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, Annotated):
        return any(_is_list(arg) for arg in typing.get_args(annotation))
    return False


class QueryModel(Generic[M]):
    """A dependency giving ``model`` validated from the request's query string.

    A list field takes every value of its repeated parameter, any other field the last
    one (as FastAPI does). Unknown parameters reach the model, which may forbid them.
    ApiRoute documents the model's parameters (``query_model_parameters``).
    """

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._list_fields = frozenset(
            name for name, field in model.model_fields.items() if _is_list(field.annotation)
        )

    async def __call__(self, request: Request) -> M:  # async: no thread-pool hop
        params = request.query_params
        data: dict[str, Any] = {}
        for key in params:
            data[key] = params.getlist(key) if key in self._list_fields else params[key]
        try:
            return self.model.model_validate(data)
        except PydanticValidationError as exc:
            raise RequestValidationError(
                [{**err, "loc": ("query", *err["loc"])} for err in exc.errors(include_url=False)]
            ) from None


def query_model(model: type[M]) -> QueryModel[M]:
    return QueryModel(model)


def query_model_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The OpenAPI parameters FastAPI documents for ``Annotated[model, Query()]``."""

    def probe_endpoint(query: Any) -> None:
        """Never served: documents the parameters."""

    # Set as an object, not a string (this module's annotations are strings).
    probe_endpoint.__annotations__ = {"query": Annotated[model, Query()], "return": None}
    probe = FastAPI()
    probe.add_api_route("/probe", probe_endpoint, methods=["GET"])
    schema = probe.openapi()
    parameters: list[dict[str, Any]] = schema["paths"]["/probe"]["get"]["parameters"]
    return parameters
