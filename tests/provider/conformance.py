"""Checks an answer of this service against the provider's published response schema for
the same operation (the extracted documents beside this module; see README.md).

One line in any test::

    assert_answer_matches(r, "/cloud/v1/users")        # an httpx.Response
    assert_matches_provider("GET", "/cloud/v1/users", 200, r.json())

Path templates are matched by shape: parameter names may differ from the provider's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.provider.extract import DOCUMENTS, shape

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ProviderOperation:
    document: str  # the file's name without .yaml
    path: str  # the provider's own template
    method: str
    operation: dict[str, Any]


def _open_nullable(node: Any) -> Any:
    """The documents are OpenAPI 3.1 (JSON Schema 2020-12) but keep 3.0's ``nullable: true``
    in places; 2020-12 ignores it, the provider means "or null": say so in 2020-12 terms."""
    if isinstance(node, list):
        return [_open_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _open_nullable(v) for k, v in node.items()}
    if out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        elif kind is None:
            out = {"anyOf": [out, {"type": "null"}]}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


_PAGE_LINKS = ("next", "previous")


def _nullable_page_links(node: Any) -> Any:
    """A paginated envelope's ``next`` and ``previous`` (an object with ``count`` and
    either link) are read as "or null": DRF's limit/offset pagination, the provider's
    framework, always writes both, null at the ends, and the provider's own addendum
    list says so; its other envelopes type them as plain strings (docs/conformance.md)."""
    if isinstance(node, list):
        return [_nullable_page_links(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable_page_links(v) for k, v in node.items()}
    props = out.get("properties")
    if isinstance(props, dict) and "count" in props:
        for link in _PAGE_LINKS:
            if isinstance(props.get(link), dict) and props[link].get("type") == "string":
                props[link] = {**props[link], "type": ["string", "null"]}
    return out


@cache
def documents() -> dict[str, dict[str, Any]]:
    return {
        name: _nullable_page_links(
            _open_nullable(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
        )
        for name in DOCUMENTS
    }


@cache
def _registry() -> Registry:
    return Registry().with_resources(
        (f"urn:provider:{name}", Resource.from_contents(doc, default_specification=DRAFT202012))
        for name, doc in documents().items()
    )


def _key(method: str, path: str) -> str:
    return f"{method.upper()} {shape(path)}"


@cache
def _extracted() -> dict[str, ProviderOperation]:
    found = {}
    for name, doc in documents().items():
        for path, item in doc["paths"].items():
            for method, operation in item.items():
                found[_key(method, path)] = ProviderOperation(name, path, method, operation)
    return found


@cache
def _indexed() -> dict[str, str]:
    """Every operation of the provider's documents, extracted or not: key -> document."""
    return {
        _key(*entry.split(" ", 1)): name
        for name, doc in documents().items()
        for entry in doc["index"]
    }


def in_provider(method: str, path: str) -> bool:
    return _key(method, path) in _indexed()


def provider_operation(method: str, path: str) -> ProviderOperation:
    key = _key(method, path)
    if key in _extracted():
        return _extracted()[key]
    if key in _indexed():
        raise AssertionError(
            f"{key} is in the provider's {_indexed()[key]}.yaml but was not extracted: "
            "re-run tests/provider/extract.py (README.md)"
        )
    raise AssertionError(f"{key} is not an operation of the provider")


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _response(op: ProviderOperation, status: int) -> tuple[dict[str, Any], str]:
    """The provider's response object for ``status`` and its JSON pointer in the document."""
    responses = op.operation.get("responses", {})
    for code in (str(status), f"{str(status)[0]}XX", "default"):
        if code in responses:
            response = responses[code]
            where = _pointer("paths", op.path, op.method, "responses", code)
            while "$ref" in response:  # e.g. #/components/responses/401
                where = response["$ref"][2:]
                response = documents()[op.document]
                for part in where.split("/"):
                    response = response[part.replace("~1", "/").replace("~0", "~")]
            return response, where
    raise AssertionError(
        f"the provider documents no {status} answer for {op.method.upper()} {op.path} "
        f"(it documents {sorted(responses)})"
    )


def provider_errors(method: str, path_template: str, status: int, body: Any) -> list[str]:
    """What in ``body`` (a decoded JSON answer, None when empty) breaks the provider's schema."""
    op = provider_operation(method, path_template)
    response, where = _response(op, status)
    content = response.get("content") or {}
    if "application/json" not in content:
        if body in (None, b"", ""):
            return []
        return [f"the provider documents no body for {status}; got {body!r:.200}"]
    if "schema" not in content["application/json"]:
        return []
    ref = f"urn:provider:{op.document}#/{where}/{_pointer('content', 'application/json')}/schema"
    validator = Draft202012Validator({"$ref": ref}, registry=_registry())
    return [
        f"at {error.json_path}: {error.message:.300}"
        for error in sorted(validator.iter_errors(body), key=lambda e: list(e.path))
    ]


def assert_matches_provider(
    method: str, path_template: str, status: int, body: Any, tolerated: Iterable[str] = ()
) -> None:
    """``tolerated``: parts of error messages for documented differences (say why beside)."""
    kept = tuple(tolerated)
    errors = [
        e
        for e in provider_errors(method, path_template, status, body)
        if not any(part in e for part in kept)
    ]
    assert not errors, (
        f"{method.upper()} {path_template} {status} breaks the provider's schema:\n  "
        + "\n  ".join(errors)
    )


def assert_answer_matches(
    response: httpx.Response, path_template: str, tolerated: Iterable[str] = ()
) -> None:
    """The same for an httpx answer: method and status are read from it."""
    body = response.json() if response.content else None
    assert_matches_provider(
        response.request.method, path_template, response.status_code, body, tolerated
    )


def schema_copy(method: str, path_template: str, status: int) -> dict[str, Any]:
    """The provider's response object (for reading in a failing test's output)."""
    return copy.deepcopy(_response(provider_operation(method, path_template), status)[0])
