"""Throttles checked before a request does any database work (docs/access.md,
"Throttling"): failed authentications per client address, and requests per API key.

The counting is the `limits` library's sliding-window counter. Its state is kept in
process memory, or in Redis when ``redis_url`` is set so that every service process
counts together; only the async storages (``limits.aio``), so that a Redis round trip
never blocks the event loop.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable
from typing import Any

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from limits.errors import StorageError
from starlette.requests import Request

from cloudadmin.auth.apikey import parse_token
from cloudadmin.config import Settings
from cloudadmin.errors import Throttled
from cloudadmin.observability.metrics import AUTH_FAILURES, THROTTLED

log = logging.getLogger("cloudadmin.throttle")


async def _allowed(answer: Awaitable[bool]) -> bool:
    """The limiter's answer; a throttle that cannot reach its storage lets requests
    through: it protects the service, it must not be the reason it refuses everyone."""
    try:
        return await answer
    except StorageError as exc:
        log.warning("throttle storage unavailable: %s", exc)
        return True


# Redis is asked on every request: a slow or absent one must cost little time.
_REDIS_TIMEOUT = 0.5


def client_address(request: Request) -> str:
    return request.client.host if request.client else ""


def presented_key_id(request: Request) -> int | None:
    """The key id of an ``apikey <id>_<secret>`` header, read without the database."""
    scheme, _, token = request.headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() != "apikey":
        return None
    parsed = parse_token(token.strip())
    return parsed.key_id if parsed else None


class Throttle:
    """One per application (``AppState.throttle``), built from the settings."""

    def __init__(
        self,
        *,
        failures: str,
        per_key: str | None = None,
        redis_url: str | None = None,
        key_prefix: str = "cloudadmin",
    ) -> None:
        self._failures: RateLimitItem = parse(failures)
        self._per_key: RateLimitItem | None = parse(per_key) if per_key else None
        self._pool: Any = None
        # Whether another process may have counted failures (Redis), or this one has:
        # until then an address cannot be past its limit, and admit() asks no storage.
        self._failures_possible = bool(redis_url)
        storage: Storage
        if redis_url:
            import redis.asyncio

            self._pool = redis.asyncio.ConnectionPool.from_url(
                redis_url, socket_timeout=_REDIS_TIMEOUT, socket_connect_timeout=_REDIS_TIMEOUT
            )
            storage = RedisStorage(
                redis_url if redis_url.startswith("async+") else f"async+{redis_url}",
                implementation="redispy",
                key_prefix=key_prefix,
                wrap_exceptions=True,
                connection_pool=self._pool,
            )
        else:
            storage = MemoryStorage()
        self._limiter = SlidingWindowCounterRateLimiter(storage)

    @classmethod
    def from_settings(cls, settings: Settings) -> Throttle:
        return cls(
            failures=settings.auth_failure_limit,
            per_key=settings.key_rate_limit,
            redis_url=settings.redis_url,
            key_prefix=settings.limits_key_prefix,
        )

    async def admit(self, request: Request) -> None:
        """Before the request takes a turn at the database: 429 when its address is past
        its failed authentications, or its key past its rate."""
        address = client_address(request)
        if (
            address
            and self._failures_possible
            and not await self._test(self._failures, "auth-failures", address)
        ):
            raise await self._throttled(
                self._failures,
                ("auth-failures", address),
                "Too many failed authentications from this address.",
            )
        if self._per_key is None:
            return
        key_id = presented_key_id(request)
        if key_id is not None and not await self._test(self._per_key, "key", str(key_id)):
            raise await self._throttled(
                self._per_key, ("key", str(key_id)), "Too many requests with this API key."
            )

    async def failed(self, request: Request) -> None:
        """Count a refused authentication against the request's address."""
        AUTH_FAILURES.inc()
        self._failures_possible = True
        address = client_address(request)
        if address:
            await self._hit(self._failures, "auth-failures", address)

    async def count(self, key_id: int) -> None:
        """Count an authenticated request against its key: only a caller who holds the
        secret spends the key's budget, never someone guessing it."""
        if self._per_key is not None and not await self._hit(self._per_key, "key", str(key_id)):
            raise await self._throttled(
                self._per_key, ("key", str(key_id)), "Too many requests with this API key."
            )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    async def _test(self, item: RateLimitItem, *ids: str) -> bool:
        """Whether a hit would still be allowed (nothing spent)."""
        return await _allowed(self._limiter.test(item, *ids))

    async def _hit(self, item: RateLimitItem, *ids: str) -> bool:
        """Spends one hit; whether it was allowed."""
        return await _allowed(self._limiter.hit(item, *ids))

    async def _throttled(
        self, item: RateLimitItem, ids: tuple[str, ...], message: str
    ) -> Throttled:
        THROTTLED.labels("auth_failures" if ids[0] == "auth-failures" else "api_key").inc()
        try:
            stats = await self._limiter.get_window_stats(item, *ids)
            wait = math.ceil(stats.reset_time - time.time())
        except StorageError:
            wait = item.get_expiry()
        return Throttled(message, retry_after=wait)
