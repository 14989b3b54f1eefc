"""Functions that turn a row into an addendum's nested dict (or a tuple), written once
from the field table (fields.py) as the code a hand would write, and compiled.

Why compiled: the list shapes up to 100 items a request, the API's hottest Python
(service.py), and the bulk load builds a COPY tuple per addendum (importer/
addendum_copy.py); a walk over the table per row would cost more than the literal it
stands for. The source is kept (``source_of``) for a reader and for the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cloudadmin.billing.addendums.fields import AddendumField, Layout

_SOURCES: dict[Callable[..., Any], str] = {}


def dict_literal(entries: Layout, value: Callable[[AddendumField], str]) -> str:
    """The source of the dict of ``entries``, each value the expression ``value(field)``."""
    written = (
        f"{key!r}: "
        + (value(node) if isinstance(node, AddendumField) else dict_literal(node, value))
        for key, node in entries
    )
    return "{" + ", ".join(written) + "}"


def build(
    name: str,
    returned: str,
    *,
    params: str = "row",
    prelude: str = "",
    names: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """The function ``name(params)`` that runs the statements of ``prelude`` (one a
    line) and returns the expression ``returned``, over ``names``."""
    body = "".join(f"    {line}\n" for line in prelude.splitlines())
    source = f"def {name}({params}):\n{body}    return {returned}\n"
    scope: dict[str, Any] = dict(names or {})
    exec(compile(source, f"<fields.FIELDS: {name}>", "exec"), scope)
    built: Callable[..., Any] = scope[name]
    _SOURCES[built] = source
    return built


def source_of(built: Callable[..., Any]) -> str:
    return _SOURCES[built]
