"""An answer read from a database row that shares most of its fields' names."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def from_row(model: type[M], row: object, /, **other: Any) -> M:
    """``model`` whose every field is ``row``'s attribute of the same name, but ``other``'s.

    Only what differs is written out at the call, so a field added to both the table and
    the answer needs no line; a field the row lacks and ``other`` does not give fails on
    the first answer (AttributeError), not silently.
    """
    same = {name: getattr(row, name) for name in model.model_fields if name not in other}
    return model.model_validate(same | other)
