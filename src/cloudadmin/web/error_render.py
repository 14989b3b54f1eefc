"""The one renderer of error bodies (docs/errors.md)."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm.exc import StaleDataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

from cloudadmin.db.unavailable import is_unavailable
from cloudadmin.errors import (
    ApiError,
    Conflict,
    InternalError,
    MethodNotAllowed,
    NotFound,
    ParseError,
    ServiceUnavailable,
    ValidationError,
)

log = logging.getLogger("cloudadmin.errors")


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or "")


def field_map_name(path: str) -> str:
    """Under /cloud the real system names the field map ``invalid_fields``."""
    return "invalid_fields" if path.startswith("/cloud") else "errors"


def error_body(path: str, error: ApiError, request_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "exception_class": error.exception_class,
        "message": error.message,
        "request_id": request_id,
    }
    if error.fields:
        body[field_map_name(path)] = error.fields
    return body


def render(request: Request, error: ApiError) -> JSONResponse:
    return JSONResponse(
        error_body(request.url.path, error, request_id_of(request)),
        status_code=error.status_code,
        headers=error.headers or None,
    )


def field_name(loc: tuple[Any, ...]) -> str:
    """``("body", "items", 0, "name")`` -> ``items.0.name``: how errors name a field."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(str(p) for p in parts) if parts else "non_field_errors"


def _message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", "Invalid value"))
    msg = msg.removeprefix("Value error, ")
    return msg if msg.endswith(".") else msg + "."


def from_validation_error(exc: RequestValidationError) -> ApiError:
    fields: dict[str, list[str]] = {}
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            detail = (err.get("ctx") or {}).get("error", "invalid JSON")
            return ParseError(f"JSON parse error - {detail}")
        name = field_name(tuple(err.get("loc", ())))
        if err.get("type") == "missing" and name == "non_field_errors":
            name = "body"
        fields.setdefault(name, []).append(_message(err))
    return ValidationError(fields=fields)


# A value the database refused as data, not as a fault of ours: PostgreSQL's SQLSTATEs
# string too long, numeric out of range, invalid byte sequence, untranslatable
# character; asyncpg's refusal to encode a bind value ("invalid input for query
# argument $1: ... out of int32 range"); SQLite's integer overflow and the UTF-8 encoder
# meeting a surrogate. The request checks (text_guard, kit/ints.py) should catch them all
# first: this net turns one that slipped through into a 400 instead of a 500.
_DATA_SQLSTATES = {"22001", "22003", "22021", "22P05"}
_UNSTORABLE_MESSAGES = re.compile(
    r"invalid input for query argument|too large to convert to SQLite|surrogates not allowed"
)
UNSTORABLE_VALUE = (
    "A value in the request is out of range or holds characters that cannot be stored."
)


def _is_unstorable_value(exc: BaseException) -> bool:
    if isinstance(exc, DBAPIError):
        if getattr(exc.orig, "sqlstate", None) in _DATA_SQLSTATES:
            return True
        return bool(_UNSTORABLE_MESSAGES.search(str(exc.orig)))
    if isinstance(exc, (OverflowError, UnicodeEncodeError)):
        return bool(_UNSTORABLE_MESSAGES.search(str(exc)))
    return False


def to_api_error(exc: BaseException) -> ApiError:
    """Any exception as the typed error that answers it."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc.__cause__, ApiError):  # e.g. a body limit hit while FastAPI read it
        return exc.__cause__
    if isinstance(exc, RequestValidationError):
        return from_validation_error(exc)
    if isinstance(exc, StarletteHTTPException):
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            return NotFound()
        if exc.status_code == 405:
            return MethodNotAllowed(headers=headers)
        generic = ApiError(str(exc.detail), headers=headers)
        generic.status_code = exc.status_code
        generic.exception_class = "HTTPError"
        return generic
    if isinstance(exc, IntegrityError):
        # A uniqueness race lost to a concurrent writer (checks ran before the write).
        return Conflict("The change conflicts with existing data.")
    if _is_unstorable_value(exc):
        log.warning("the database refused a value of the request: %s", exc)
        return ValidationError(UNSTORABLE_VALUE)
    if isinstance(exc, PoolTimeoutError):  # every pooled connection busy for too long
        return ServiceUnavailable("The database is busy.")
    if is_unavailable(exc):  # gone, refusing connections, or a wrong database or role
        return ServiceUnavailable("The database is unreachable.")
    if isinstance(exc, StaleDataError):
        # Safety net: the row went away under a change that did not lock it first
        # (changes lock the rows they change: repositories' ``for_change``).
        return NotFound()
    if isinstance(exc, (ConnectionError, OSError)):
        return ServiceUnavailable("The database is unreachable.")
    return InternalError()


def render_exception(request: Request, exc: BaseException) -> JSONResponse:
    error = to_api_error(exc)
    if isinstance(error, ServiceUnavailable) and not isinstance(exc, ApiError):
        # Say why: a wrong database name or role answers 503 like a closed port. The
        # driver's message only: the statement's parameters stay out of the log.
        reason = getattr(exc, "orig", None) or exc
        log.warning(
            "database unavailable: %s: %s",
            type(reason).__name__,
            str(reason)[:300],
            extra={"request_id": request_id_of(request)},
        )
    if isinstance(error, InternalError) and not isinstance(exc, ApiError):
        rid = request_id_of(request)
        log.exception("unhandled error", extra={"request_id": rid}, exc_info=exc)
        error = InternalError(f"Internal server error. Request id: {rid}.")
    return render(request, error)
