"""One place that sees every request end: its metrics and its access-log line.

Pure ASGI, inside the trusted-proxy middleware (so the client address is the one the
activity log stores) and outside the request-context middleware (so a body refused
with 413 is counted too). The route template is what the router matched
(``scope["route"]``), never the raw path: ``/iam/users/{userId}``, one series per
operation whatever the ids. The request id and the caller are read from the request's
state after the answer: the same values the activity-log row was written with.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cloudadmin.kit.redact import redact_query
from cloudadmin.observability.metrics import REQUEST_SECONDS, REQUESTS

access_log = logging.getLogger("cloudadmin.access")

# Any other method is one label value: a client must not be able to add series at will.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"


class ObserveMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in _METHODS else "other"
            REQUESTS.labels(method, route, str(status)).inc()
            REQUEST_SECONDS.labels(method, route, str(status)).observe(seconds)
            if access_log.isEnabledFor(logging.INFO):
                _log(scope, route, status, seconds)


def _log(scope: Scope, route: str, status: int, seconds: float) -> None:
    state: dict[str, Any] = scope.get("state") or {}
    caller = state.get("caller")
    client = scope.get("client")
    remote_ip = client[0] if client else ""
    raw = scope.get("raw_path") or scope["path"].encode()
    path = _printable(raw.decode("latin-1"))
    query = scope.get("query_string", b"").decode("latin-1")
    if query:
        path = f"{path}?{_printable(redact_query(query))}"
    fields = {
        "method": scope["method"],
        "path": path,
        "route": route,
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "request_id": state.get("request_id"),
        "remote_ip": remote_ip,
        "client_id": getattr(caller, "account_id", None),
        "user_id": getattr(caller, "user_id", None),
        "token_id": getattr(caller, "key_id", None),
        "pid": os.getpid(),  # which worker process of `serve --workers N` answered
    }
    who = (
        ""
        if caller is None
        else (f" client_id={caller.account_id} user_id={caller.user_id} token_id={caller.key_id}")
    )
    access_log.info(
        '%s "%s %s" %d %.1fms route=%s request_id=%s%s',
        remote_ip,
        fields["method"],
        path,
        status,
        seconds * 1000,
        route,
        fields["request_id"],
        who,
        extra=fields,
    )


def _printable(text: str) -> str:
    """Control characters (an escape sequence in a path) written as \\xNN: a log line
    must not drive the terminal that shows it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
