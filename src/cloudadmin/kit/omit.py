"""Optional answer fields that the provider types without null (a string, a number...): an
answer leaves such a field out when it has no value, it never says null (docs/conformance.md).

    website: str | None = omitted()

Fields the provider marks nullable keep ``X | None`` without a default and answer null.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field


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
        default=None, exclude_if=_is_none, json_schema_extra=_not_nullable,
        description=description, **constraints,
    )
