"""Pure-ASGI middleware: request ids and body size limits, before any routing."""

from __future__ import annotations

import json
import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cloudadmin.errors import PayloadTooLarge
from cloudadmin.web.error_render import error_body

_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._\-]{1,64}$")


class RequestContextMiddleware:
    """Gives every request an id (kept from ``X-Request-ID`` when sane), echoes it
    on the response, and refuses bodies over the limit with 413 without reading them."""

    def __init__(self, app: ASGIApp, *, json_limit: int, upload_limit: int) -> None:
        self.app = app
        self.json_limit = json_limit
        self.upload_limit = upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        given = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _SANE_REQUEST_ID.match(given) else str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = request_id
        rid_header = (b"x-request-id", request_id.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), rid_header]
            await send(message)

        ctype = headers.get(b"content-type", b"").decode("latin-1").lower()
        limit = self.upload_limit if ctype.startswith("multipart/") else self.json_limit
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._too_large(scope, request_id, limit, send_with_id)
            return

        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(_too_large_message(limit))
            return message

        await self.app(scope, counting_receive, send_with_id)

    async def _too_large(self, scope: Scope, request_id: str, limit: int, send: Send) -> None:
        body = json.dumps(
            error_body(scope["path"], PayloadTooLarge(_too_large_message(limit)), request_id)
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _too_large_message(limit: int) -> str:
    return f"Request body is larger than the limit of {limit} bytes."
