"""Throttles checked before a request does any database work (docs/access.md,
"Throttling"): failed authentications per client address, and requests per API key.

The counting is the `limits` library's sliding-window counter. Its state is kept in
process memory, or in Redis when ``redis_url`` is set so that every service process
counts together; only the async storages (``limits.aio``), so that a Redis round trip
never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from limits.errors import StorageError
from starlette.requests import Request

from cloudadmin.auth.apikey import parse_token
from cloudadmin.config import Settings
from cloudadmin.errors import Throttled
from cloudadmin.observability.metrics import AUTH_FAILURES, THROTTLE_UNCHECKED, THROTTLED

log = logging.getLogger("cloudadmin.throttle")

T = TypeVar("T")

# How long after Redis failed to answer a check the throttle asks it again: in between,
# checks pass at once instead of each waiting out the timeout.
RETRY_SECONDS = 1.0
# At most one warning per this many seconds while Redis does not answer.
WARN_INTERVAL_SECONDS = 60.0


class _SharedStorage:
    """Whether Redis is asked, and what is said about it while it does not answer.

    A throttle that cannot reach its storage lets requests through (fails open): it
    protects the service, it must not be the reason it refuses everyone. Each call is
    bounded by ``timeout``; after a failure, checks skip Redis for ``retry_seconds``
    (one check then tries again), so an absent or stalled Redis costs a request nothing
    but, once a second, the timeout. Every check passed unasked is counted
    (``THROTTLE_UNCHECKED``); one warning is logged per ``warn_interval``.
    """

    def __init__(self, timeout: float, retry_seconds: float, warn_interval: float) -> None:
        self.timeout = timeout
        self._retry_seconds = retry_seconds
        self._warn_interval = warn_interval
        self._retry_at = 0.0  # monotonic; 0: Redis is asked
        self._failing = False
        self._warned_at: float | None = None
        self._unchecked = 0  # since the last warning

    def may_ask(self) -> bool:
        now = time.monotonic()
        if now < self._retry_at:
            return False
        if self._failing:
            self._retry_at = now + self._retry_seconds  # this check probes; others skip
        return True

    def answered(self) -> None:
        if self._failing:
            log.info("throttle storage answers again; %d checks passed uncounted", self._unchecked)
            self._failing, self._retry_at, self._warned_at, self._unchecked = False, 0.0, None, 0

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self._failing = True
        self._retry_at = now + self._retry_seconds
        if self._warned_at is None or now - self._warned_at >= self._warn_interval:
            reason = str(exc) or f"no answer within {self.timeout * 1000:.0f} ms"
            log.warning(
                "throttle storage (Redis) unavailable, checks pass uncounted "
                "(%d since it failed): %s",
                self._unchecked + 1,
                reason,
            )
            self._warned_at = now

    def unchecked(self) -> None:
        self._unchecked += 1
        THROTTLE_UNCHECKED.inc()


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
        redis_timeout: float = 0.05,
        retry_seconds: float = RETRY_SECONDS,
        warn_interval: float = WARN_INTERVAL_SECONDS,
    ) -> None:
        self._failures: RateLimitItem = parse(failures)
        self._per_key: RateLimitItem | None = parse(per_key) if per_key else None
        self._pool: Any = None
        # Whether another process may have counted failures (Redis), or this one has:
        # until then an address cannot be past its limit, and admit() asks no storage.
        self._failures_possible = bool(redis_url)
        # Only Redis can fail to answer; process memory always does.
        self._shared = (
            _SharedStorage(redis_timeout, retry_seconds, warn_interval) if redis_url else None
        )
        storage: Storage
        if redis_url:
            import redis.asyncio

            # The socket timeouts end a stalled connection; _ask's own bound covers the
            # whole call (connecting, waiting for a pooled connection, the round trip).
            self._pool = redis.asyncio.ConnectionPool.from_url(
                redis_url, socket_timeout=redis_timeout, socket_connect_timeout=redis_timeout
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
            redis_timeout=settings.redis_timeout_ms / 1000,
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

    async def _ask(self, question: Callable[[], Awaitable[T]], unanswered: T) -> T:
        """The storage's answer, or ``unanswered`` when Redis does not give it in time."""
        shared = self._shared
        if shared is None:
            return await question()
        if not shared.may_ask():
            shared.unchecked()
            return unanswered
        try:
            async with asyncio.timeout(shared.timeout):
                answer = await question()
        except (StorageError, TimeoutError) as exc:
            shared.failed(exc)
            shared.unchecked()
            return unanswered
        shared.answered()
        return answer

    async def _test(self, item: RateLimitItem, *ids: str) -> bool:
        """Whether a hit would still be allowed (nothing spent)."""
        return await self._ask(lambda: self._limiter.test(item, *ids), True)

    async def _hit(self, item: RateLimitItem, *ids: str) -> bool:
        """Spends one hit; whether it was allowed."""
        return await self._ask(lambda: self._limiter.hit(item, *ids), True)

    async def _throttled(
        self, item: RateLimitItem, ids: tuple[str, ...], message: str
    ) -> Throttled:
        THROTTLED.labels("auth_failures" if ids[0] == "auth-failures" else "api_key").inc()
        stats = await self._ask(lambda: self._limiter.get_window_stats(item, *ids), None)
        wait = math.ceil(stats.reset_time - time.time()) if stats else item.get_expiry()
        return Throttled(message, retry_after=wait)
