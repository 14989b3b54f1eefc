"""Typed API errors. Each carries its status; one renderer (web/errors) shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class ApiError(Exception):
    """An error the API answers with its status and one body shape (docs/errors.md).

    A subclass declares what sets it apart in its class line: `status` (else its
    parent's), `message` (the default message) and `exception_class`, the body's name
    for it, and `headers` that every response of it carries. A class that declares its
    status is a kind of error of its own, named by its class unless the wire spells it
    otherwise; one that keeps its parent's status keeps its parent's name too (a refusal
    the service tells apart inside, such as a known key's, is the same error outside).
    """

    status_code = 500
    exception_class = "InternalError"
    default_message = "Internal server error."

    default_headers: Mapping[str, str] = {}

    def __init_subclass__(
        cls,
        *,
        status: int | None = None,
        message: str | None = None,
        exception_class: str | None = None,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status_code = status
        if message is not None:
            cls.default_message = message
        if headers is not None:
            cls.default_headers = headers
        if exception_class is not None:
            cls.exception_class = exception_class
        elif status is not None:
            cls.exception_class = cls.__name__

    def __init__(
        self,
        message: str | None = None,
        *,
        fields: Mapping[str, Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.fields = {k: list(v) for k, v in (fields or {}).items()}
        if message is None:
            message = _summary(self.fields) if self.fields else self.default_message
        self.message = message
        self.headers = {**self.default_headers, **(headers or {})}
        super().__init__(message)


def _summary(fields: Mapping[str, Sequence[str]]) -> str:
    return "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in fields.items())


class ParseError(ApiError, status=400, message="Malformed request."):
    """The body is not JSON."""


class ValidationError(ApiError, status=400, message="Invalid input."):
    """Validation of body, query or path refused a value, or a service's rule did."""

    @classmethod
    def field(cls, name: str, message: str) -> ValidationError:
        return cls(fields={name: [message]})


class NotAuthenticated(
    ApiError,
    status=401,
    message="Authentication credentials were not provided.",
    exception_class="not_authenticated",
    headers={"WWW-Authenticate": "APIKey"},
):
    """No credentials; every 401 names the scheme that would be accepted."""


class TokenNotValid(
    NotAuthenticated, message="Given token not valid.", exception_class="token_not_valid"
):
    """Credentials given but refused, one message whatever the reason."""


class PermissionDenied(
    ApiError, status=403, message="You do not have permission to perform this action."
):
    """The caller's role forbids the operation."""


class NotFound(ApiError, status=404, message="Not found.", exception_class="NotFoundError"):
    """No such path or resource, or one of another tenant."""


class MethodNotAllowed(
    ApiError, status=405, message="Method not allowed.", exception_class="HTTPError"
):
    """The path exists, the method does not."""


class RequestTimeout(ApiError, status=408, message="The request body did not arrive in time."):
    """The body stalled before it was read whole."""


class Conflict(ApiError, status=409, message="Conflict.", exception_class="ConflictError"):
    """A uniqueness rule, or a concurrent writer that won at commit."""


class PayloadTooLarge(ApiError, status=413, message="Request body is too large."):
    """The body is over its limit."""


class UnsupportedMediaType(ApiError, status=415, message="Unsupported media type."):
    """A JSON operation sent with another content type."""


class Unprocessable(
    ApiError,
    status=422,
    message="The request cannot be processed.",
    exception_class="UnprocessableEntity",
):
    """The request is well formed but cannot be carried out (an idempotency key reused)."""


class _RetryLater(ApiError):
    """An error the client may retry after `Retry-After` seconds (at least one)."""

    default_retry_after = 1

    def __init__(self, message: str | None = None, retry_after: int | None = None) -> None:
        wait = self.default_retry_after if retry_after is None else retry_after
        super().__init__(message, headers={"Retry-After": str(max(1, wait))})


class Throttled(_RetryLater, status=429, message="Request was throttled."):
    """Too many requests (or failed logins) from one client."""


class InternalError(ApiError, status=500, message="Internal server error."):
    """Anything unexpected; the detail goes to the log only."""


class ServiceUnavailable(_RetryLater, status=503, message="Service temporarily unavailable."):
    """The database is unreachable or busy."""

    default_retry_after = 5
