"""Publishing to subscribers' brokers: one cached connection per connection string."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import Sequence
from typing import Any

import aio_pika
import aiormq.exceptions as amqp_errors
from aio_pika.abc import AbstractChannel, AbstractConnection
from aiormq.connection import TransportFactory
from yarl import URL

from cloudadmin.kit.outbound import Outbound, OutboundRefused

log = logging.getLogger("cloudadmin.amqp")

CONFIRM_TIMEOUT = 15.0

# One reason per kind of failure, never the broker's or the network's own words: a
# closed port, a filtered one and one that never answers all read "could not connect",
# so the answers do not map the network behind the broker.
COULD_NOT_CONNECT = "Could not connect to the broker."
AUTHENTICATION_FAILED = "The broker refused the user name or password."
TLS_FAILED = "The TLS handshake with the broker failed."
VHOST_REFUSED = "The virtual host does not exist or the user may not use it."
EXCHANGE_NOT_FOUND = "The exchange does not exist."
ACCESS_REFUSED = "The broker refused access to the exchange."
NOT_CONFIRMED = "The broker did not confirm the message in time."
REFUSED_MESSAGE = "The broker refused the message."


class PublishError(Exception):
    """The broker could not be reached or refused a message; ``str()`` is one of the
    reasons above, or why the address is not allowed."""


# What a broker may send at once. A publisher receives short frames only (the
# handshake, confirms) and at most a returned message of its own (a user-action record,
# in frames of the negotiated frame_max: 128 KiB on RabbitMQ). aiormq reads whatever
# length a frame header claims, up to 4 GiB, and gathers a message's body up to the
# size its content header claims, up to 16 EiB: a longer frame or message ends the
# connection before any of it is read.
MAX_FRAME_BYTES = 1024 * 1024
MAX_CONTENT_BYTES = 16 * 1024 * 1024
_CONTENT_HEADER = 2  # the frame type of a message's content header


class FrameTooLong(ConnectionError):
    """The broker announced a frame or message longer than the bounds above."""


class _BoundedReader(asyncio.StreamReader):
    """aiormq reads a frame in three ``readexactly``: its type (1 byte), its channel
    and length (6), then the payload and end marker of that length. This refuses a
    length over ``MAX_FRAME_BYTES`` before reading any of it, and a content header
    whose body size is over ``MAX_CONTENT_BYTES``."""

    _frame_type: int | None = None
    _step = 0  # 1: the type was read; 2: the channel and length too

    async def readexactly(self, n: int) -> bytes:
        if n > MAX_FRAME_BYTES:
            raise FrameTooLong(f"a frame of {n} bytes")
        data = await super().readexactly(n)
        if n == 1:
            self._frame_type, self._step = data[0], 1
        elif n == 6 and self._step == 1:
            self._step = 2
        else:
            if self._step == 2 and self._frame_type == _CONTENT_HEADER and n >= 12:
                # class id (2 bytes), weight (2), body size (8)
                size = int.from_bytes(data[4:12], "big")
                if size > MAX_CONTENT_BYTES:
                    raise FrameTooLong(f"a message of {size} bytes")
            self._step = 0
        return data


class _VettedTransport(TransportFactory):
    """Connects aiormq to an address ``Outbound`` checked, not to whatever the name
    resolves to when aiormq would look it up; TLS still verifies the name."""

    def __init__(self, outbound: Outbound) -> None:
        self.outbound = outbound

    async def create(
        self, url: URL, **kwargs: Any
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        provider = kwargs.pop("ssl_context_provider", None)
        context = await provider.get_context() if url.scheme == "amqps" and provider else None
        host = url.host or ""
        sock = await self.outbound.connect(host, url.port or (5671 if context else 5672))
        try:
            # asyncio.open_connection, with a reader that bounds each frame.
            loop = asyncio.get_running_loop()
            reader = _BoundedReader(limit=kwargs.pop("limit", 2**16), loop=loop)
            protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
            transport, _ = await loop.create_connection(
                lambda: protocol,
                sock=sock,
                ssl=context,
                server_hostname=host if context else None,
                ssl_handshake_timeout=self.outbound.timeout if context else None,
                **kwargs,
            )
        except BaseException:
            sock.close()
            raise
        return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


class _Connection(aio_pika.Connection):
    """aio_pika drops keyword arguments it does not know; this hands aiormq the
    transport that goes through ``Outbound``."""

    def __init__(self, url: URL, outbound: Outbound, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.kwargs["transport_factory"] = _VettedTransport(outbound)


def reason(exc: BaseException, *, publishing: bool = False) -> str:
    """The one generic reason for ``exc`` (raised while connecting, or ``publishing``)."""
    if isinstance(exc, OutboundRefused):
        return str(exc)
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return TLS_FAILED
    if isinstance(exc, amqp_errors.AuthenticationError | amqp_errors.ProbableAuthenticationError):
        return AUTHENTICATION_FAILED
    if isinstance(exc, amqp_errors.ConnectionNotAllowed) or (
        # The broker closes instead of opening the virtual host (530 NOT_ALLOWED).
        isinstance(exc, amqp_errors.InvalidFrameError) and "OpenOk" in str(exc)
    ):
        return VHOST_REFUSED
    if isinstance(exc, amqp_errors.ChannelNotFoundEntity):
        return EXCHANGE_NOT_FOUND
    if isinstance(exc, amqp_errors.ChannelAccessRefused):
        return ACCESS_REFUSED
    if isinstance(exc, amqp_errors.DeliveryError):
        return REFUSED_MESSAGE
    if publishing and isinstance(exc, TimeoutError):
        return NOT_CONFIRMED
    return COULD_NOT_CONNECT


class BrokerPool:
    """Connections are reused across batches, not opened per message. Every connection
    goes through ``outbound`` (the default refuses every non-public address)."""

    def __init__(self, outbound: Outbound | None = None) -> None:
        self.outbound = outbound or Outbound()
        self._channels: dict[str, tuple[AbstractConnection, AbstractChannel]] = {}
        self._lock = asyncio.Lock()

    async def _channel(self, url: str) -> AbstractChannel:
        async with self._lock:
            cached = self._channels.get(url)
            if cached and not cached[0].is_closed and not cached[1].is_closed:
                return cached[1]
            if cached:
                await _close_quietly(cached[0])
            connection = _Connection(URL(url), self.outbound)
            try:
                await connection.connect(timeout=self.outbound.timeout)
            except BaseException:
                await _close_quietly(connection)
                raise
            channel = await connection.channel(publisher_confirms=True)
            self._channels[url] = (connection, channel)
            return channel

    async def publish(
        self,
        url: str,
        exchange: str | None,
        routing_key: str | None,
        messages: Sequence[tuple[str, dict[str, Any]]],
    ) -> int:
        """Publishes ``(message_id, body)`` pairs in order, persistent, with publisher
        confirms. Returns how many leading messages the broker confirmed; raises
        PublishError when none was."""
        try:
            channel = await self._channel(url)
            target = (
                channel.default_exchange
                if not exchange
                else await channel.get_exchange(exchange, ensure=False)
            )
        except Exception as exc:
            await self.drop(url)
            raise _failure(url, exc) from exc
        # Started in order on one channel, so the broker receives them in order; the
        # confirms are awaited together.
        results = await asyncio.gather(
            *(
                target.publish(
                    aio_pika.Message(
                        body=json.dumps(body, separators=(",", ":")).encode(),
                        content_type="application/json",
                        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                        message_id=message_id,
                    ),
                    routing_key=routing_key or "",
                    timeout=CONFIRM_TIMEOUT,
                )
                for message_id, body in messages
            ),
            return_exceptions=True,
        )
        confirmed = 0
        for result in results:
            if isinstance(result, BaseException):
                break
            confirmed += 1
        if confirmed < len(results):
            await self.drop(url)
            failure = next(r for r in results if isinstance(r, BaseException))
            if confirmed == 0:
                raise _failure(url, failure, publishing=True)
        return confirmed

    async def drop(self, url: str) -> None:
        async with self._lock:
            cached = self._channels.pop(url, None)
        if cached:
            await _close_quietly(cached[0])

    async def close(self) -> None:
        async with self._lock:
            cached, self._channels = list(self._channels.values()), {}
        for connection, _ in cached:
            await _close_quietly(connection)


async def _close_quietly(connection: AbstractConnection) -> None:
    with contextlib.suppress(Exception):  # already broken: nothing to release
        await asyncio.wait_for(connection.close(), 5)


def _failure(url: str, exc: BaseException, *, publishing: bool = False) -> PublishError:
    # The exception itself is logged by type only: its text is the broker's or the
    # network's, and may quote what the caller sent.
    log.info("AMQP failure: %s", type(exc).__name__)
    if isinstance(exc, OutboundRefused):
        return PublishError(str(exc))
    return PublishError(f"{where(url)}: {reason(exc, publishing=publishing)}")


def where(url: str) -> str:
    """``host:port`` of a connection string (``[v6]:port``), to say which broker."""
    parsed = URL(url)
    host = parsed.host or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parsed.port}"
