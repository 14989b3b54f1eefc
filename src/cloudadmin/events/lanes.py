"""How a dispatcher's lanes share the work: the doorbell that wakes idle lanes one at a
time, and the cap on lanes held by slow destinations (``SlowLanes``, ``watched``)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import NamedTuple

from cloudadmin.events.senders import Message, Send

# A destination that goes this long without taking a message (a webhook that answers
# slowly or not at all, a broker that does not confirm or connect) is slow.
SLOW_SECONDS = 2.0


class Doorbell:
    """Wakes one idle lane per ring; a lane that a ring woke and that found work rings
    again, so lanes join one after another while there is work for them, and a single
    event costs one extra look, not one per lane. A lane notes ``generation`` before it
    looks for work and does not wait if a ring came meanwhile: none is missed."""

    def __init__(self) -> None:
        self.generation = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def idle(self) -> int:
        """How many lanes wait for a ring."""
        return sum(not lane.done() for lane in self._waiting)

    def ring(self) -> None:
        self.generation += 1
        while self._waiting:
            lane = self._waiting.popleft()
            if not lane.done():  # not cancelled
                lane.set_result(None)
                return

    def ring_all(self) -> None:
        """Wakes every idle lane (the dispatcher is stopping: they end)."""
        self.generation += 1
        while self._waiting:
            lane = self._waiting.popleft()
            if not lane.done():
                lane.set_result(None)

    async def wait(self, since: int) -> None:
        if self.generation != since:
            return
        woken = asyncio.get_running_loop().create_future()
        self._waiting.append(woken)
        await woken


class SlowLanes:
    """How many of a dispatcher's lanes serve slow destinations: at most ``limit``
    (half of them), so the others stay free for everyone else however many tenants'
    destinations are slow. Per process; which destinations are slow is kept in the
    database (the states' ``slow``), so every worker knows it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy = 0

    def take(self) -> bool:
        if self.busy >= self.limit:
            return False
        self.busy += 1
        return True

    def give(self) -> None:
        self.busy -= 1


class Sent(NamedTuple):
    """How a watched batch went."""

    accepted: int  # how many leading messages the far end took
    error: str | None  # why not the rest (as ``Send``)
    stalled: bool  # the far end went ``slow_seconds`` without taking one
    abandoned: bool  # the lane gave the rest up to a slow lane
    place: bool  # the lane now holds one of the slow lanes' places


async def watched(
    send: Send, messages: list[Message], place: bool, slow_lanes: SlowLanes, slow_seconds: float
) -> Sent:
    """Sends a batch and watches the far end take it. When it goes ``slow_seconds``
    without taking a message it is slow (``stalled``), and a lane that holds no slow
    lanes' place (``place``) takes one; when all are taken it abandons the batch instead:
    what the far end took counts, the rest waits for a slow lane, without a failure or a
    backoff. So slow destinations hold at most half of the lanes for longer than
    ``slow_seconds``, whatever their number."""
    loop = asyncio.get_running_loop()
    taken, last = 0, loop.time()

    def progress(count: int) -> None:
        nonlocal taken, last
        taken, last = count, loop.time()

    task: asyncio.Future[tuple[int, str | None]] = asyncio.ensure_future(send(messages, progress))
    stalled = took = False
    try:
        while not task.done():
            quiet = loop.time() - last
            if quiet < slow_seconds:
                await asyncio.wait({task}, timeout=slow_seconds - quiet)
                continue
            stalled = True
            if place:
                await asyncio.wait({task})
            elif slow_lanes.take():
                place = took = True
            else:
                task.cancel()
                await asyncio.wait({task})
                return Sent(taken, None, True, True, place)
        accepted, error = task.result()
    except BaseException:
        if took:
            slow_lanes.give()
        raise
    finally:
        task.cancel()  # when this lane was cancelled: the send ends with it
    return Sent(accepted, error, stalled, False, place)
