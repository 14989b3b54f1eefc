"""What the provider's SDK (``gcore``) can send: each of its resource methods with the
requests it makes, read from the SDK's own source.

The client is walked from its top (``client.cloud``, ``client.iam``, ...) through every
resource attribute, so a method is named as code calls it
(``cloud.load_balancers.listeners.update_and_poll``). A method's requests are the
``self._get/_post/_put/_patch/_delete/_get_api_list(path, ...)`` calls in its body, the
path a literal, an f-string or ``path_template("...")``; a method written on top of
others (``update_and_poll``: update, then ``self._client.cloud.tasks.poll``, then get)
makes the requests of those it calls. The query parameters a request may carry are the
keys of the dict given as ``query=`` (under their wire names, the parameters type's
aliases applied). A public method in which no request is found is an error:
the SDK has a way of sending that this reader does not know, and the walk's completeness
would be a guess.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from gcore import AsyncGcore
from gcore._resource import AsyncAPIResource
from gcore._utils._transform import PropertyInfo

Op = tuple[str, str]  # (HTTP method, path template with {} for each parameter)

SENDERS = {"_get": "GET", "_post": "POST", "_put": "PUT", "_patch": "PATCH", "_delete": "DELETE"}
PARAMETER = re.compile(r"\{[^}]*\}")


def template(path: str) -> str:
    """A path with its parameters' names dropped: ``/iam/users/{userId}`` and the SDK's
    ``/iam/users/{user_id}`` are one path."""
    return PARAMETER.sub("{}", path)


@dataclass(frozen=True)
class Method:
    name: str  # as called on the client: "iam.api_tokens.create"
    ops: frozenset[Op]
    # The query parameters (wire names) each request may carry besides ``extra_query``.
    query: dict[Op, frozenset[str]] = field(default_factory=dict, compare=False)


Found = dict[Op, frozenset[str]]


class UnreadMethod(Exception):
    """A public SDK method in which no request was found."""


def _path_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
        )
    if isinstance(node, ast.Call) and node.args:  # path_template("/x/{id}", id=id)
        return _path_of(node.args[0])
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    """``self._client.cloud.tasks.poll`` as ["self", "_client", "cloud", "tasks", "poll"]."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve(root: Any, names: list[str]) -> Any:
    for name in names:
        root = getattr(root, name)
    return root


class Reader:
    def __init__(self, client: AsyncGcore) -> None:
        self.client = client

    @cache  # noqa: B019 - one reader per run; methods are read once however often called
    def ops(self, resource: AsyncAPIResource, name: str) -> Found:
        function = getattr(type(resource), name)
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        names = vars(sys.modules[function.__module__])  # what the SDK's module imported
        found: dict[Op, frozenset[str]] = {}

        def add(more: Found) -> None:
            for op, names in more.items():
                found[op] = found.get(op, frozenset()) | names

        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            dotted = _dotted(node.func)
            if not dotted or dotted[0] != "self":
                continue
            sender = dotted[1:]
            if len(sender) == 1 and sender[0] in SENDERS and node.args:
                path = _path_of(node.args[0])
                if path is not None:
                    op = (SENDERS[sender[0]], template(path))
                    add({op: _query_of(node, names)})
            elif sender == ["_get_api_list"] and node.args:
                path = _path_of(node.args[0])
                verb = next(
                    (
                        str(k.value.value).upper()
                        for k in node.keywords
                        if k.arg == "method" and isinstance(k.value, ast.Constant)
                    ),
                    "GET",
                )
                if path is not None:
                    add({(verb, template(path)): _query_of(node, names)})
            elif len(sender) == 1 and _is_public(sender[0]) and sender[0] != name:
                if callable(getattr(type(resource), sender[0], None)):
                    add(self.ops(resource, sender[0]))
            elif len(sender) > 2 and sender[0] == "_client":
                owner = _resolve(self.client, sender[1:-1])
                if isinstance(owner, AsyncAPIResource):
                    add(self.ops(owner, sender[-1]))
        if not found:
            raise UnreadMethod(f"{type(resource).__name__}.{name}: no request found")
        return found


def _query_of(call: ast.Call, names: dict[str, Any]) -> frozenset[str]:
    """The wire names of the ``query=`` dict in a request's ``options=``: its keys, each
    renamed by its ``PropertyInfo(alias=...)`` in the parameters type (the call's second
    argument, looked up in the SDK module's names)."""
    for node in ast.walk(call):
        if not (isinstance(node, ast.keyword) and node.arg == "query"):
            continue
        transform = node.value
        if isinstance(transform, ast.Await):  # the async client's async_maybe_transform
            transform = transform.value
        if not (isinstance(transform, ast.Call) and transform.args):
            continue
        given = transform.args[0]
        if not isinstance(given, ast.Dict):
            continue
        keys = [k.value for k in given.keys if isinstance(k, ast.Constant)]
        aliases: dict[str, str] = {}
        if len(transform.args) > 1:
            dotted = _dotted(transform.args[1])
            if dotted:
                params = _resolve(names[dotted[0]], dotted[1:])
                for key, hint in typing.get_type_hints(params, include_extras=True).items():
                    for extra in getattr(hint, "__metadata__", ()):
                        if isinstance(extra, PropertyInfo) and extra.alias:
                            aliases[key] = extra.alias
        return frozenset(aliases.get(str(k), str(k)) for k in keys)
    return frozenset()


def _is_public(name: str) -> bool:
    return not name.startswith("_") and name not in {
        "with_raw_response",
        "with_streaming_response",
    }


def _resources(prefix: str, owner: Any) -> Iterator[tuple[str, AsyncAPIResource]]:
    for name, attribute in inspect.getmembers(type(owner)):
        if not _is_public(name) or not isinstance(attribute, property | _cached_property()):
            continue
        value = getattr(owner, name)
        if isinstance(value, AsyncAPIResource):
            dotted = f"{prefix}{name}"
            yield dotted, value
            yield from _resources(f"{dotted}.", value)


def _cached_property() -> type:
    from functools import cached_property

    return cached_property


def sdk_methods() -> list[Method]:
    """Every public method of every resource of the SDK's async client, with its requests."""
    client = AsyncGcore(api_key="unused", base_url="http://unused.invalid")
    reader = Reader(client)
    methods = []
    for dotted, resource in _resources("", client):
        for name, member in inspect.getmembers(type(resource)):
            if _is_public(name) and inspect.isfunction(member):
                found = reader.ops(resource, name)
                methods.append(Method(f"{dotted}.{name}", frozenset(found), found))
    return sorted(methods, key=lambda m: m.name)
