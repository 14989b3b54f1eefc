"""Publishing to subscribers' brokers: one cached connection per connection string."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from cloudadmin.kit.redact import MASK, mask_url_password

CONNECT_TIMEOUT = 10.0
CONFIRM_TIMEOUT = 15.0


class PublishError(Exception):
    """The broker could not be reached or refused a message (password masked)."""


class BrokerPool:
    """Connections are reused across batches, not opened per message."""

    def __init__(self) -> None:
        self._channels: dict[str, tuple[AbstractRobustConnection, AbstractChannel]] = {}
        self._lock = asyncio.Lock()

    async def _channel(self, url: str) -> AbstractChannel:
        async with self._lock:
            cached = self._channels.get(url)
            if cached and not cached[0].is_closed and not cached[1].is_closed:
                return cached[1]
            if cached:
                await _close_quietly(cached[0])
            connection = await aio_pika.connect(url, timeout=CONNECT_TIMEOUT)
            channel = await connection.channel(publisher_confirms=True)
            self._channels[url] = (connection, channel)  # type: ignore[assignment]
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
            raise PublishError(_describe(url, exc)) from exc
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
                raise PublishError(_describe(url, failure))
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


async def _close_quietly(connection: AbstractRobustConnection) -> None:
    with contextlib.suppress(Exception):  # already broken: nothing to release
        await asyncio.wait_for(connection.close(), 5)


def _describe(url: str, exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    password = urlsplit(url).password
    if password:
        text = text.replace(password, MASK)
    return f"{mask_url_password(url)}: {mask_url_password(text)}"[:1000]
