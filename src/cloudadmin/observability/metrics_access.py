"""Who may read the metrics: anyone, or, with ``CLOUDADMIN_METRICS_BEARER_TOKEN`` set,
only a scraper that presents it (docs/operations.md, "Who may scrape"). One check for
`serve`'s /metrics (web/metrics_page.py) and `worker`'s metrics listener (below)."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from pydantic import SecretStr

# What a 401 of the metrics asks for (RFC 6750).
BEARER_CHALLENGE = 'Bearer realm="metrics"'


class Refusal(Enum):
    missing = "not_authenticated"  # no Authorization header (or an empty one)
    wrong = "token_not_valid"  # another scheme, or another token

    @property
    def message(self) -> str:
        return (
            "Authentication credentials were not provided."
            if self is Refusal.missing
            else "Given token not valid."
        )


def refusal(authorization: str | None, token: SecretStr | None) -> Refusal | None:
    """Why a scrape with this ``Authorization`` header is refused, or None when it may
    read. The token is compared as digests in constant time: neither its text nor its
    length shows in how long a refusal takes."""
    if token is None:
        return None
    scheme, _, given = (authorization or "").strip().partition(" ")
    if not scheme:
        return Refusal.missing
    expected = hashlib.sha256(token.get_secret_value().encode()).digest()
    presented = hashlib.sha256(given.strip().encode("utf-8", "replace")).digest()
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented, expected):
        return Refusal.wrong
    return None


def refusal_body(why: Refusal) -> bytes:
    """The errors.md shape (without a request id: the worker's listener has none)."""
    return json.dumps({"exception_class": why.value, "message": why.message}).encode()


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _bearer_only(app: WsgiApp, token: SecretStr) -> WsgiApp:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        why = refusal(environ.get("HTTP_AUTHORIZATION"), token)
        if why is None:
            return app(environ, start_response)
        body = refusal_body(why)
        start_response(
            "401 Unauthorized",
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("WWW-Authenticate", BEARER_CHALLENGE),
            ],
        )
        return [body]

    return guarded


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Scrapes are not logged (one line per scrape, every few seconds)."""


def start_metrics_server(
    port: int, host: str, token: SecretStr | None
) -> tuple[WSGIServer, threading.Thread]:
    """prometheus_client's ``start_http_server``, with the token checked: the metrics of
    this process in Prometheus text at any path, served by a daemon thread (scrapes never
    wait behind the event loop's work)."""

    class Server(ThreadingWSGIServer):
        address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    app: WsgiApp = make_wsgi_app(REGISTRY)
    if token is not None:
        app = _bearer_only(app, token)
    server = make_server(host, port, app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server, thread
