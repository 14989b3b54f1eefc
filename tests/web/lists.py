"""The service's list operations, found in its own OpenAPI document, so that a list
added later is covered by the tests that walk them (test_page_links.py,
test_unknown_query_params.py).

A list is a GET whose 200 answer is an array, or an object with a ``count`` and an
array of items (``results``; the activity log's ``result``). A paginated list is one
whose answer is such an object and that takes ``limit`` and ``offset``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

# The cloud API's pages are the provider's {count, results}: no links (its SDK's
# offset pages count their way through), so only the other envelopes carry them.
LINKLESS_PREFIX = "/cloud/"


@dataclass(frozen=True)
class ListOperation:
    path: str
    query: tuple[str, ...]  # the documented query parameters, in order
    envelope: dict[str, Any] | None  # the page object's schema (None: a plain array)
    items_key: str | None

    @property
    def paginated(self) -> bool:
        return self.envelope is not None and {"limit", "offset"} <= set(self.query)

    @property
    def has_links(self) -> bool:
        """Whether its pages must carry ``next`` and ``previous``."""
        return self.paginated and not self.path.startswith(LINKLESS_PREFIX)


@cache
def openapi() -> dict[str, Any]:
    from cloudadmin.app import create_app
    from cloudadmin.config import Settings

    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="lists"))
    return app.openapi()


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    components = openapi()["components"]["schemas"]
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolved(schema)
    found = [schema]
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            found += _branches(branch)
    return found


def _items_key(schema: dict[str, Any]) -> str | None:
    props = schema.get("properties", {})
    if "count" not in props:
        return None
    arrays = [k for k, v in props.items() if _resolved(v).get("type") == "array"]
    return arrays[0] if len(arrays) == 1 else None


@cache
def list_operations() -> tuple[ListOperation, ...]:
    found = []
    for path, item in openapi()["paths"].items():
        op = item.get("get")
        if op is None:
            continue
        content = op.get("responses", {}).get("200", {}).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        if schema is None:
            continue
        branches = _branches(schema)
        envelopes = [b for b in branches if _items_key(b) is not None]
        arrays = [b for b in branches if b.get("type") == "array"]
        if not (envelopes or arrays):
            continue
        query = tuple(p["name"] for p in op.get("parameters", []) if p["in"] == "query")
        envelope = envelopes[0] if envelopes else None
        items = _items_key(envelope) if envelope else None
        found.append(ListOperation(path, query, envelope, items))
    return tuple(sorted(found, key=lambda o: o.path))


def ident(op: ListOperation) -> str:
    return op.path
