"""Waiting for a condition in tests: poll with a generous deadline, and when it passes,
fail saying what was missing instead of returning a flag that a caller may ignore."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

Condition = Callable[[], bool | Awaitable[bool]]


async def until(
    condition: Condition,
    what: str | Callable[[], str],
    timeout: float = 20.0,
    interval: float = 0.02,
) -> None:
    """Returns once ``condition()`` (or the awaitable it returns) holds; otherwise raises
    AssertionError naming ``what`` was awaited (a callable is asked at the deadline, so
    that it can tell how much was missing then)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if loop.time() > deadline:
            described = what() if callable(what) else what
            raise AssertionError(f"waited {timeout:g} s for {described}")
        await asyncio.sleep(interval)
