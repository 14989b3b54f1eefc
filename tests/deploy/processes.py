"""Starting and stopping real `cloudadmin serve` and `cloudadmin worker` processes."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.servers import free_port


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs one `cloudadmin` command to its end."""
    return subprocess.run(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass
class Process:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    base_url: str | None = None  # servers only

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} (exit {self.proc.poll()}) ---\n" + "\n".join(
            text.splitlines()[-lines:]
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def start(name: str, args: list[str], env: dict[str, str], logs: Path) -> Process:
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Process(name, proc, log)


def start_server(name: str, env: dict[str, str], logs: Path) -> Process:
    port = free_port()
    process = start(
        name, ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"], env, logs
    )
    process.base_url = f"http://127.0.0.1:{port}"
    return process


async def wait_ready(servers: list[Process], timeout: float = 90) -> None:
    """Waits until every server answers /readyz 200; fails naming those that did not."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiting = list(servers)
    async with httpx.AsyncClient(timeout=2) as client:
        while waiting:
            for server in list(waiting):
                try:
                    answer = await client.get(f"{server.base_url}/readyz")
                    if answer.status_code == 200:
                        waiting.remove(server)
                except httpx.TransportError:
                    pass
            dead = [s for s in waiting if s.proc.poll() is not None]
            if dead or (waiting and loop.time() > deadline):
                logs = "\n".join(s.tail() for s in waiting)
                raise AssertionError(f"not ready within {timeout} s:\n{logs}")
            if waiting:
                await asyncio.sleep(0.05)
