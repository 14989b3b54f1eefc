"""Delivery failures in the log: one line per subscription and reason a minute.

A dead broker fails every attempt (several a minute early in the backoff, and with
many subscriptions on one broker, many at once); logging each would bury everything
else. The first failure of a (subscription, reason) is logged at WARNING; repeats
within the window are counted, and the next line logged for it says how many there
were ("... (12 more in the last minute)").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

WINDOW_SECONDS = 60.0


@dataclass
class _Seen:
    logged_at: float
    repeats: int = 0


class FailureLog:
    def __init__(
        self,
        logger: logging.Logger,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.window = window
        self.clock = clock
        self._seen: dict[Hashable, _Seen] = {}

    def warning(
        self, key: Hashable, reason: str, msg: str, *args: Any, extra: dict[str, Any] | None = None
    ) -> bool:
        """Logs ``msg % args`` unless (``key``, ``reason``) was logged within the
        window; True when it was logged."""
        now = self.clock()
        seen = self._seen.get((key, reason))
        if seen is not None and now - seen.logged_at < self.window:
            seen.repeats += 1
            return False
        if seen is not None and seen.repeats:
            msg += " (%d more in the last %s)"
            args = (*args, seen.repeats, _span(now - seen.logged_at))
        self._forget_older_than(now - self.window)
        self._seen[(key, reason)] = _Seen(now)
        self.logger.warning(msg, *args, extra=extra)
        return True

    def _forget_older_than(self, cutoff: float) -> None:
        """Drops what no later line would report (logged long ago, nothing repeated),
        so the table stays as small as the set of subscriptions failing now."""
        if len(self._seen) < 256:
            return
        for k in [k for k, s in self._seen.items() if s.logged_at < cutoff and not s.repeats]:
            del self._seen[k]


def _span(seconds: float) -> str:
    return "minute" if seconds < 120 else f"{seconds / 60:.0f} minutes"
