"""A bound on the time a request head may take to arrive (docs/operations.md,
"Slow clients").

uvicorn bounds an idle connection only after a response (its keep-alive timeout), and
neither a request's head nor its body (the body is the application's to bound:
CLOUDADMIN_BODY_TIMEOUT_SECONDS, web/route.py). A client that connects and sends
nothing, or part of a request line or of its headers, would hold its connection, socket
and parser for ever. `cloudadmin serve` therefore runs uvicorn with this HTTP protocol:
uvicorn's own (httptools), plus one timer, which runs while a head is awaited (from the
connection's start, and again after each response on a kept-alive connection) until
the head is complete. When it fires, the connection is closed.

uvicorn imports the class by name in each of its worker processes, so the timeout is read
from the settings (``CLOUDADMIN_REQUEST_HEAD_TIMEOUT_SECONDS``) when the process makes
its first connection, not passed in.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cloudadmin.config import get_settings

log = logging.getLogger("cloudadmin.head_timeout")


class HeadTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request head does not
    arrive within the timeout."""

    head_timeout: float | None = None  # seconds; the settings' value, once per process

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if HeadTimeoutProtocol.head_timeout is None:
            HeadTimeoutProtocol.head_timeout = get_settings().request_head_timeout_seconds
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._head_arrived()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Kept alive and no request of it under way (a pipelined one whose head has
        # arrived is): the next head is awaited now.
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._await_head()

    def _await_head(self) -> None:
        self._head_arrived()
        assert self.head_timeout is not None
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_late)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_late(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is under way: its head did arrive
        if not self.transport.is_closing():
            log.debug("no request head within %g s from %s; closed", self.head_timeout, self.client)
            self.transport.close()
