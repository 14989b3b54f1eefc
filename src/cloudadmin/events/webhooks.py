"""POSTing user actions to subscribers' webhooks, through the outbound allow-list.

httpx would resolve the URL's host itself and connect to whatever it resolves to at
that moment; here the connection goes to an address ``Outbound`` resolved and checked
(so a name that resolves inward the next time, DNS rebinding, cannot slip past), while
the request keeps the URL's host in its Host header and TLS its name for SNI and
certificate checks. No proxy from the environment, no redirects followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import httpcore
import httpx

from cloudadmin.kit.outbound import Outbound, OutboundRefused

log = logging.getLogger("cloudadmin.webhooks")

# A receiver's status line decides (httpcore reads at most 100 KiB of it and the
# headers). Of the body this much is read, for this long at most, only so that a short
# answer leaves the connection reusable (the network is read in pieces of up to 64 KiB);
# a longer or slower one is cut off by closing the connection.
MAX_ANSWER_BYTES = 4096
ANSWER_READ_SECONDS = 1.0

# One reason per kind of failure, never the receiver's or the network's own words (as
# for brokers, events/amqp.py): the answers do not map the network behind the URL.
COULD_NOT_CONNECT = "Could not connect to the receiver."
TLS_FAILED = "The TLS handshake with the receiver failed."
NO_ANSWER = "The receiver did not answer in time."
REDIRECTED = "The receiver answered with a redirect; redirects are not followed."


def refused_status(status: int) -> str:
    return f"The receiver answered HTTP {status}."


class WebhookError(Exception):
    """A message was not accepted; ``str()`` is one of the reasons above, or why the
    address is not allowed. ``accepted``: how many messages before it were."""

    def __init__(self, reason: str, accepted: int = 0) -> None:
        super().__init__(reason)
        self.accepted = accepted


class _VettedBackend(httpcore.AnyIOBackend):
    """Connects to one of the addresses ``Outbound`` resolved and checked for the host
    httpcore asks for; the request and TLS still use the host's name."""

    def __init__(self, outbound: Outbound) -> None:
        self.outbound = outbound

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self.outbound.resolve(host, port)
        except OSError as exc:  # does not resolve: as a connection that failed
            raise httpcore.ConnectError(type(exc).__name__) from exc
        last: Exception | None = None
        for _family, _type, _proto, sockaddr in addresses:
            try:
                return await super().connect_tcp(
                    str(sockaddr[0]), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last


class _VettedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, outbound: Outbound) -> None:
        super().__init__(trust_env=False, retries=0)
        # httpx has no parameter for httpcore's network backend: the pool is made again
        # with the same TLS context and the vetting backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            http1=True,
            http2=False,
            retries=0,
            network_backend=_VettedBackend(outbound),
        )


def client(outbound: Outbound) -> httpx.AsyncClient:
    """An HTTP client whose every connection goes through ``outbound``."""
    timeout = httpx.Timeout(outbound.timeout)
    return httpx.AsyncClient(
        transport=_VettedTransport(outbound),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )


class WebhookSender:
    """POSTs messages one after the other (so they arrive in order), on one pooled
    client. Each message is a JSON body; 2xx means received."""

    def __init__(self, outbound: Outbound | None = None) -> None:
        self.outbound = outbound or Outbound()
        # Made for the first webhook: its TLS contexts cost a start of the service about
        # 30 ms, and most deployments deliver no webhook at all.
        self._client: httpx.AsyncClient | None = None

    async def post(
        self,
        url: str,
        header_name: str,
        header_value: str,
        messages: Sequence[tuple[str, dict[str, Any]]],
        *,
        budget: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """POSTs ``(message_id, body)`` pairs in order, each within the outbound timeout
        (or ``budget``, when that is shorter), stopping at the first one not accepted
        (WebhookError, with how many were) or when ``budget`` seconds would be overrun
        by another message. Returns how many were accepted; ``progress`` is told the
        count after each one."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        # The first message is always sent: an outbound timeout as long as the budget
        # would otherwise send nothing, ever, and the batch would come back at once.
        limit = self.outbound.timeout if budget is None else min(self.outbound.timeout, budget)
        for accepted, (message_id, body) in enumerate(messages):
            if accepted and budget is not None and loop.time() - started > budget - limit:
                return accepted  # the rest in the next batch, under a fresh lease
            try:
                status = await self._post_one(
                    limit,
                    url,
                    json.dumps(body, separators=(",", ":")).encode(),
                    {
                        "Content-Type": "application/json",
                        "X-Message-Id": message_id,
                        header_name: header_value,
                    },
                )
            except Exception as exc:
                raise _failure(exc, accepted) from None
            if not 200 <= status < 300:
                raise WebhookError(
                    REDIRECTED if 300 <= status < 400 else refused_status(status), accepted
                )
            if progress is not None:
                progress(accepted + 1)
        return len(messages)

    async def _post_one(
        self, limit: float, url: str, content: bytes, headers: dict[str, str]
    ) -> int:
        """POSTs one message within ``limit`` seconds; the answer's status.

        The status line alone is the outcome. Of the body, at most ``MAX_ANSWER_BYTES``
        are read, for ``ANSWER_READ_SECONDS`` at most, and only so that a short answer
        leaves the connection reusable; a longer or slower one is cut off by closing the
        connection. A receiver that streams an endless answer costs one read."""
        async with asyncio.timeout(limit):
            if self._client is None:
                self._client = client(self.outbound)
            async with self._client.stream("POST", url, content=content, headers=headers) as answer:
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    async with asyncio.timeout(min(ANSWER_READ_SECONDS, limit)):
                        read = 0
                        async for piece in answer.aiter_raw():
                            read += len(piece)
                            if read > MAX_ANSWER_BYTES:
                                break
                return answer.status_code

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def _failure(exc: BaseException, accepted: int) -> WebhookError:
    # Logged by type only: the text may quote the receiver or the network.
    log.info("webhook failure: %s", type(exc).__name__)
    if isinstance(exc, OutboundRefused):
        return WebhookError(str(exc), accepted)
    if _caused_by_tls(exc):
        return WebhookError(TLS_FAILED, accepted)
    if isinstance(exc, TimeoutError | httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout):
        return WebhookError(NO_ANSWER, accepted)
    return WebhookError(COULD_NOT_CONNECT, accepted)


def _caused_by_tls(exc: BaseException) -> bool:
    """httpx wraps httpcore's ConnectError, which wraps the ssl module's error."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
