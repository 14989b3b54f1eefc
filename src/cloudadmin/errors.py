"""Typed API errors. Each carries its status; one renderer (web/errors) shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class ApiError(Exception):
    status_code = 500
    exception_class = "InternalError"
    default_message = "Internal server error."

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
        self.headers = dict(headers or {})
        super().__init__(message)


def _summary(fields: Mapping[str, Sequence[str]]) -> str:
    return "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in fields.items())


class ValidationError(ApiError):
    status_code = 400
    exception_class = "ValidationError"
    default_message = "Invalid input."

    @classmethod
    def field(cls, name: str, message: str) -> ValidationError:
        return cls(fields={name: [message]})


class ParseError(ApiError):
    status_code = 400
    exception_class = "ParseError"
    default_message = "Malformed request."


class NotAuthenticated(ApiError):
    status_code = 401
    exception_class = "not_authenticated"
    default_message = "Authentication credentials were not provided."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "APIKey"})


class TokenNotValid(NotAuthenticated):
    exception_class = "token_not_valid"
    default_message = "Given token not valid."


class PermissionDenied(ApiError):
    status_code = 403
    exception_class = "PermissionDenied"
    default_message = "You do not have permission to perform this action."


class NotFound(ApiError):
    status_code = 404
    exception_class = "NotFoundError"
    default_message = "Not found."


class MethodNotAllowed(ApiError):
    status_code = 405
    exception_class = "HTTPError"
    default_message = "Method not allowed."


class RequestTimeout(ApiError):
    status_code = 408
    exception_class = "RequestTimeout"
    default_message = "The request body did not arrive in time."


class Conflict(ApiError):
    status_code = 409
    exception_class = "ConflictError"
    default_message = "Conflict."


class PayloadTooLarge(ApiError):
    status_code = 413
    exception_class = "PayloadTooLarge"
    default_message = "Request body is too large."


class Unprocessable(ApiError):
    status_code = 422
    exception_class = "UnprocessableEntity"
    default_message = "The request cannot be processed."


class UnsupportedMediaType(ApiError):
    status_code = 415
    exception_class = "UnsupportedMediaType"
    default_message = "Unsupported media type."


class Throttled(ApiError):
    status_code = 429
    exception_class = "Throttled"
    default_message = "Request was throttled."

    def __init__(self, message: str | None = None, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after))})


class InternalError(ApiError):
    status_code = 500
    exception_class = "InternalError"
    default_message = "Internal server error."


class ServiceUnavailable(ApiError):
    status_code = 503
    exception_class = "ServiceUnavailable"
    default_message = "Service temporarily unavailable."

    def __init__(self, message: str | None = None, retry_after: int = 5) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})
