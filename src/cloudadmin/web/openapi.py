"""OpenAPI additions: the one error body, 400 instead of 422, security everywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute

from cloudadmin.auth.apikey import API_KEY_SCHEME
from cloudadmin.web import idempotency
from cloudadmin.web.route import ApiRoute

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

# The generic answers each operation can give besides its own (docs/errors.md, "Status
# codes in the OpenAPI document"): an operation documents every status it may answer.
_ERRORS = {
    "400": "Invalid input",
    "401": "Missing or invalid API key",
    "403": "The caller's role forbids the operation",
    "404": "No such resource (or another tenant's)",
    "429": "Throttled: too many failed authentications from the address, or requests "
    "with the key; see Retry-After",
    "503": "The database is unavailable or busy; see Retry-After",
}
# Operations that take a request body.
_BODY_ERRORS = {
    "408": "The request body did not arrive in time",
    "413": "The request body is too large",
    "415": "The request body's Content-Type is not the operation's",
}
# Operations that change data.
_CHANGE_ERRORS = {
    "409": "The change conflicts with existing data or a concurrent change",
}
# Operations whose service refuses a change that conflicts with existing data or state, by
# operationId (web/operation_ids.py): their 409 says which (the one place that says it).
_CONFLICTS = {
    "create_user": "A user with this email already exists (`errors.email`)",
    "update_user": "Another user already has this email (`errors.email`)",
    "create_client_user": "A user with this email already exists (`errors.username`)",
    "create_seller": "A seller with this email already exists (`errors.email`)",
    "update_seller": "Another seller already has this email (`errors.email`)",
    "create_amqp_subscription": "The account already has a subscription",
    "create_webhook_subscription": "The account already has a webhook subscription",
    "update_listener": "The listener is locked by a task",
    "update_listener_name": "The listener is locked by a task",
}
# POST: a repeated Idempotency-Key with another request.
_POST_ERRORS = {
    "422": "The Idempotency-Key was used with another request",
}
_CHANGES = {"post", "put", "patch", "delete"}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again",
        "schema": {"type": "integer", "minimum": 1},
    }
}


def _errors_of(method: str, op: dict[str, Any]) -> dict[str, str]:
    errors = dict(_ERRORS)
    if "requestBody" in op:
        errors |= _BODY_ERRORS
    if method in _CHANGES:
        errors |= _CHANGE_ERRORS
    if op.get("operationId") in _CONFLICTS:
        errors["409"] = f"{_CONFLICTS[op['operationId']]}; or a concurrent change conflicted"
    if method == "post":
        errors |= _POST_ERRORS
    return dict(sorted(errors.items()))


# The keys FastAPI writes before an operation's "security" (its metadata).
_BEFORE_SECURITY = ("tags", "summary", "description", "operationId", "deprecated")


def add_api_key_security(schema: dict[str, Any], routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The API key scheme, and it as the security of every operation whose route
    authenticates its caller: what FastAPI writes for a security dependency, which
    get_caller no longer declares (auth/apikey.py, ``API_KEY_SCHEME``)."""
    scheme = API_KEY_SCHEME.model.model_dump(mode="json", by_alias=True, exclude_none=True)
    secured = False
    for route in routes:
        if not (isinstance(route, ApiRoute) and route.include_in_schema and route.authenticates):
            continue
        item = schema.get("paths", {}).get(route.path_format, {})
        for method in route.methods or ():
            op = item.get(method.lower())
            if op is None:
                continue
            front = {k: op.pop(k) for k in _BEFORE_SECURITY if k in op}
            rest = dict(op)
            op.clear()
            op.update(front, security=[{API_KEY_SCHEME.scheme_name: []}], **rest)
            secured = True
    if secured:
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})[API_KEY_SCHEME.scheme_name] = scheme
    return schema


def add_error_schema(schema: dict[str, Any]) -> dict[str, Any]:
    components = schema.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    components["schemas"].pop("HTTPValidationError", None)
    components["schemas"].pop("ValidationError", None)
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path, item in schema.get("paths", {}).items():
        if path == "/healthz":
            continue
        for method, op in item.items():
            responses = op.setdefault("responses", {})
            if path == "/readyz":
                responses.setdefault(
                    "503", {"description": _ERRORS["503"], **ref, "headers": _RETRY_AFTER}
                )
                continue
            responses.pop("422", None)
            for code, text in _errors_of(method, op).items():
                extra = {"headers": _RETRY_AFTER} if code in ("429", "503") else {}
                responses.setdefault(code, {"description": text, **ref, **extra})
            for code, response in responses.items():
                # An error an endpoint describes in its own words has the one body too.
                if code.isdigit() and int(code) >= 400 and "content" not in response:
                    response.update(ref)
    return idempotency.document(schema)
