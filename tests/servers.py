"""Servers the tests start as processes: a free port to give them, and waiting until
they answer."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_healthy(
    base: str, proc: subprocess.Popen, output: Callable[[], str] | None = None, timeout: float = 180
) -> None:
    """Waits until ``base``/healthz answers 200; fails with what the server printed
    (``output``, else its stdout pipe) when it exits first or ``timeout`` passes (only a
    server that hangs: on a busy machine a start with two workers took over a minute)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            if output is not None:
                printed = output()
            else:
                printed = proc.stdout.read() if proc.stdout and proc.poll() is not None else ""
            raise AssertionError(
                f"the server at {base} did not answer /healthz "
                f"(exit status {proc.poll()}):\n{printed}"
            )
        time.sleep(0.05)  # a start-up takes seconds; the poll costs a refused connect
