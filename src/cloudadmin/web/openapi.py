"""OpenAPI additions: the one error body, 400 instead of 422, security everywhere."""

from __future__ import annotations

from typing import Any

from cloudadmin.web import idempotency

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["exception_class", "message", "request_id"],
    "properties": {
        "exception_class": {"type": "string", "example": "ValidationError"},
        "message": {"type": "string"},
        "request_id": {"type": "string"},
        "errors": {
            "type": "object",
            "description": "Field errors (under /iam and /billing).",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        "invalid_fields": {
            "type": "object",
            "description": "Field errors (under /cloud).",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
}

_ERRORS = {
    "400": "Invalid input",
    "401": "Missing or invalid API key",
    "403": "The caller's role forbids the operation",
    "404": "No such resource (or another tenant's)",
    "429": "Throttled: too many failed authentications from the address, or requests "
           "with the key; see Retry-After",
}


def add_error_schema(schema: dict[str, Any]) -> dict[str, Any]:
    components = schema.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    components["schemas"].pop("HTTPValidationError", None)
    components["schemas"].pop("ValidationError", None)
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path, item in schema.get("paths", {}).items():
        if path in ("/healthz", "/readyz"):
            continue
        for op in item.values():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for code, text in _ERRORS.items():
                responses.setdefault(code, {"description": text, **ref})
            if "requestBody" in op:
                responses.setdefault("408", {"description": "The body came too slowly", **ref})
    return idempotency.document(schema)
