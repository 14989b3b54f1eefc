"""Optional fields that the provider types without null (a string, a number...).

An answer leaves such a field out when it has no value, it never says null
(docs/conformance.md):

    website: str | None = omitted()

Fields the provider marks nullable keep ``X | None`` without a default and answer null.

A partial update (PATCH) takes such a field or leaves it out, and refuses null:

    email: Omittable[Email] = None

The model holds None for a field the request left out (``model_fields_set`` tells which
were sent); an explicit null fails validation as any other value of the wrong type does.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar, get_args

from pydantic import Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema

from cloudadmin.kit.body import LenientBody


def _is_none(value: object) -> bool:
    return value is None


def _not_nullable(schema: dict[str, Any]) -> None:
    """The OpenAPI tells what a client sees: the field's type, no null, not required."""
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1:
            del schema["anyOf"]
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept
    schema.pop("default", None)


def omitted(description: str | None = None, **constraints: Any) -> Any:
    """A response model's field that is left out of the answer while it is None."""
    return Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_not_nullable,
        description=description,
        **constraints,
    )


class _NoneOnlyWhenLeftOut:
    """Validates (and documents) ``X | None`` as ``X``: the default None is never
    validated, so it stands for "not sent", while a null that is sent meets X's own
    validation and gets X's own error."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        (sent,) = (arg for arg in get_args(source) if arg is not type(None))
        return handler(sent)


T = TypeVar("T")
Omittable = Annotated[T | None, _NoneOnlyWhenLeftOut()]


class PartialUpdate(LenientBody):
    """A PATCH body: only the fields sent change; read-only fields of the resource sent
    along are ignored."""

    def sent(self) -> dict[str, Any]:
        """The fields the request holds, by name, with their values."""
        return {name: getattr(self, name) for name in self.model_fields_set}
