"""web/turns.py: requests take their turns at the database in arrival order."""

from __future__ import annotations

import asyncio

import pytest

from cloudadmin.errors import ServiceUnavailable
from cloudadmin.web.turns import Turns


class TestTurns:
    async def test_waiters_are_served_in_arrival_order(self):
        turns = Turns(1, timeout=5)
        served: list[int] = []

        async def request(n: int) -> None:
            async with turns.turn():
                served.append(n)
                await asyncio.sleep(0)  # let the others queue behind

        async with turns.turn():
            tasks = []
            for n in range(6):
                tasks.append(asyncio.create_task(request(n)))
                await asyncio.sleep(0)  # arrive one after the other
        await asyncio.gather(*tasks)
        assert served == [0, 1, 2, 3, 4, 5]

    async def test_a_newcomer_does_not_overtake_a_woken_waiter(self):
        # The pool's own queue let this happen: the starved waiter queued again at the
        # back, which made the multi-second stragglers of the benchmark.
        turns = Turns(1, timeout=5)
        order: list[str] = []

        async def waiter() -> None:
            async with turns.turn():
                order.append("waiter")

        async with turns.turn():
            task = asyncio.create_task(waiter())
            await asyncio.sleep(0)  # the waiter is queued
        async with turns.turn():  # asks again at once, before the waiter ran
            order.append("newcomer")
        await task
        assert order == ["waiter", "newcomer"]

    async def test_no_turn_within_the_timeout_is_503(self):
        turns = Turns(1, timeout=0.05)
        async with turns.turn():
            with pytest.raises(ServiceUnavailable):
                async with turns.turn():
                    pass
        async with turns.turn():  # the slot came back
            pass
