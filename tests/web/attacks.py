"""Bounded attacks on a real `cloudadmin serve` over loopback, and a legitimate caller
timed beside them (tests/web/test_attacks.py, bench/auth_timing.py).

Attackers connect from 127.0.0.2-127.0.0.5, the legitimate caller from 127.0.0.1, so
that the service tells them apart by address as it would tell apart machines.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.servers import free_port, wait_until_healthy

ATTACKERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
LEGITIMATE = "127.0.0.1"


@contextmanager
def served(env: dict[str, str], log: Path, *, demo: bool = False) -> Iterator[str]:
    """`cloudadmin serve` on a free loopback port with ``env``, its output in ``log``
    (``demo``: the demo landscape loaded, its keys printed); yields its base URL."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cloudadmin",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *(["--demo"] if demo else []),
            ],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, proc, log.read_text)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Window:
    """How long an attack and the legitimate caller beside it go on: until the attack
    has done what it must (``attacked``, of the statuses the attackers got so far) and
    the legitimate caller has been answered ``answers`` times while it went on, or
    ``seconds`` at most (the test's assertions then say what was missing)."""

    def __init__(
        self, seconds: float, attacked: Callable[[Counter[int | str]], bool], answers: int
    ) -> None:
        self.deadline = time.monotonic() + seconds
        self.attacked = attacked
        self.answers = answers
        self.answered = 0  # the legitimate caller's answers so far
        self.under_way = threading.Event()  # the attackers got a first answer
        self.over = threading.Event()

    def attack_goes_on(self, statuses: Counter[int | str]) -> bool:
        if self.over.is_set():
            return False
        if time.monotonic() >= self.deadline or (
            self.attacked(statuses) and self.answered >= self.answers
        ):
            self.over.set()
            return False
        return True

    def caller_goes_on(self) -> bool:
        return not self.over.is_set() and time.monotonic() < self.deadline


@dataclass
class Timings:
    """The legitimate caller's answers: (seconds, status) each."""

    answers: list[tuple[float, int | str]] = field(default_factory=list)

    @property
    def worst(self) -> float:
        return max(seconds for seconds, _ in self.answers)

    @property
    def statuses(self) -> Counter[int | str]:
        return Counter(status for _, status in self.answers)


async def legitimate(
    base: str,
    window: Window,
    call: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
    *,
    timeout: float = 10.0,
    pause: float = 0.1,
) -> Timings:
    """Calls ``call`` again and again while the attack in ``window`` goes on, timing
    each answer; an answer that does not come within ``timeout`` counts as that long,
    status "timeout"."""
    timings = Timings()
    transport = httpx.AsyncHTTPTransport(local_address=LEGITIMATE)
    async with httpx.AsyncClient(transport=transport, base_url=base, timeout=timeout) as c:
        n = 0
        while window.caller_goes_on():
            n += 1
            started = time.monotonic()
            status: int | str
            try:
                status = (await call(c, n)).status_code
            except httpx.TimeoutException:
                status = "timeout"
            timings.answers.append((time.monotonic() - started, status))
            window.answered = len(timings.answers)
            await asyncio.sleep(pause)
    return timings


async def flood(
    base: str, window: Window, path: str, authorization: str, loops: int = 12
) -> Counter[int | str]:
    """``loops`` concurrent callers from the attackers' addresses sending GET ``path``
    with ``authorization`` as fast as they are answered, while ``window`` goes on; the
    statuses they got."""
    statuses: Counter[int | str] = Counter()

    async def loop(n: int) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=ATTACKERS[n % len(ATTACKERS)])
        async with httpx.AsyncClient(transport=transport, base_url=base, timeout=60) as c:
            while window.attack_goes_on(statuses):
                try:
                    r = await c.get(path, headers={"Authorization": authorization})
                    statuses[r.status_code] += 1
                except httpx.TransportError:
                    statuses["transport error"] += 1
                window.under_way.set()

    await asyncio.gather(*(loop(n) for n in range(loops)))
    return statuses


async def trickle(
    base: str,
    window: Window,
    path: str,
    authorization: str,
    connections: int = 10,
    every: float = 2.0,
) -> Counter[int | str]:
    """``connections`` raw connections from the attackers' addresses each sending a
    POST ``path`` that announces 1000 bytes of JSON body and sends one every ``every``
    seconds; a connection answered or closed opens again, while ``window`` goes on. The
    statuses they got."""
    port = int(base.rsplit(":", 1)[1])
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: {authorization}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    ).encode()
    statuses: Counter[int | str] = Counter()
    trickling: set[int] = set()

    async def one(n: int) -> None:
        while window.attack_goes_on(statuses):
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, local_addr=(ATTACKERS[n % len(ATTACKERS)], 0)
            )
            answer = asyncio.ensure_future(reader.read(64))
            try:
                writer.write(head)
                while not answer.done() and window.attack_goes_on(statuses):
                    writer.write(b" ")  # JSON whitespace, one byte at a time
                    await writer.drain()
                    trickling.add(n)
                    if len(trickling) == connections:  # every connection holds a request
                        window.under_way.set()
                    sent = time.monotonic()
                    while (
                        not answer.done()
                        and time.monotonic() - sent < every
                        and window.attack_goes_on(statuses)
                    ):
                        await asyncio.wait([answer], timeout=0.05)
                if answer.done():
                    line = answer.result().split(b"\r\n", 1)[0].split()
                    statuses[int(line[1]) if len(line) > 1 else "closed"] += 1
            except ConnectionError:
                statuses["reset"] += 1
            finally:
                answer.cancel()
                writer.close()

    await asyncio.gather(*(one(n) for n in range(connections)))
    return statuses


async def beside(
    window: Window,
    attack: Callable[[], Coroutine[Any, Any, Counter[int | str]]],
    legit: Callable[[], Awaitable[Timings]],
) -> tuple[Counter[int | str], Timings]:
    """Runs the attack on an event loop of its own (a thread), so that the legitimate
    caller's timings are not the attackers' own loop being busy; the legitimate caller
    starts once the attackers got their first answer."""
    attacked = asyncio.create_task(asyncio.to_thread(lambda: asyncio.run(attack())))
    while not window.under_way.is_set() and window.caller_goes_on() and not attacked.done():
        await asyncio.sleep(0.01)
    timings = await legit()
    return await attacked, timings
