"""What an idle `cloudadmin serve` costs, and how soon one event reaches its subscriber.

1. Idle CPU: `python -m cloudadmin serve` on SQLite and on PostgreSQL, with the events
   dispatcher on and off (CLOUDADMIN_RUN_DISPATCHER). Once healthy, the server is left
   alone for ``--seconds``; its CPU time (utime + stime of /proc/<pid>/stat, the server
   process only) before and after gives the share of one core it used.
2. Latency of one event (dispatcher on): a subscription to a queue of the local
   RabbitMQ, then ``--events`` changes through the API, each after a pause long enough
   for the dispatcher to be idle; the time from the change's answer (its transaction has
   committed) to the message's arrival in the queue.

    python bench/idle_cpu.py [--seconds 30] [--events 5] [--pause 3] [--settle 2] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aio_pika
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.cli.test_serve import DOCUMENT, free_port, wait_until_healthy  # noqa: E402
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url  # noqa: E402

RABBIT = os.environ.get("CLOUDADMIN_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
# The local RabbitMQ is on loopback, which the service refuses by default.
OUTBOUND_ALLOW = "127.0.0.0/8,::1"
RESELLER_KEY = "apikey 2_reseller-secret"  # of DOCUMENT


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (fields 14 and 15 of /proc/<pid>/stat), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def environment(tmp: Path, database_url: str | None, dispatcher: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "CLOUDADMIN_DATA_DIR": str(tmp),
        "CLOUDADMIN_SECRET_KEY": "bench-idle",
        "CLOUDADMIN_RUN_DISPATCHER": "true" if dispatcher else "false",
        "CLOUDADMIN_OUTBOUND_ALLOW": OUTBOUND_ALLOW,
        "CLOUDADMIN_LOG_LEVEL": "WARNING",
    }
    env.pop("CLOUDADMIN_DATABASE_URL", None)
    if database_url:
        env["CLOUDADMIN_DATABASE_URL"] = database_url
    return env


@contextmanager
def serving(env: dict[str, str], tmp: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A loaded, healthy `serve` (one process: uvicorn runs the app in it)."""
    doc = tmp / "landscape.json"
    doc.write_text(json.dumps(DOCUMENT))
    loaded = subprocess.run(
        [sys.executable, "-m", "cloudadmin", "load", str(doc)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if loaded.returncode != 0:
        raise SystemExit(loaded.stderr)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "serve.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, proc)
        yield proc, base
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def idle_cpu(pid: int, seconds: float, settle: float) -> float:
    """Percent of one core the idle server ``pid`` used over ``seconds``, ``settle``
    seconds after it answered healthy."""
    time.sleep(settle)  # start-up work (first passes, caches) is not idling
    before, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.monotonic() - t0)


async def latencies(base: str, events: int, pause: float) -> list[float]:
    """Seconds from each change's answer to its message in the queue."""
    connection = await aio_pika.connect_robust(RABBIT)
    channel = await connection.channel()
    exchange = await channel.declare_exchange(
        f"bench-{os.getpid()}", aio_pika.ExchangeType.DIRECT, auto_delete=True
    )
    queue = await channel.declare_queue(exclusive=True)
    await queue.bind(exchange, routing_key="user.actions")
    arrived: asyncio.Queue[float] = asyncio.Queue()

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await arrived.put(time.perf_counter())

    await queue.consume(on_message, no_ack=True)
    out = []
    try:
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": RESELLER_KEY}, timeout=30
        ) as c:
            r = await c.post(
                "/cloud/v1/user_actions/subscribe_amqp",
                json={
                    "connection_string": RABBIT,
                    "exchange": exchange.name,
                    "routing_key": "user.actions",
                },
            )
            r.raise_for_status()
            await asyncio.wait_for(arrived.get(), 60)  # the subscription's own event
            for i in range(events):
                await asyncio.sleep(pause)  # the dispatcher goes idle (and backs off)
                r = await c.post(
                    "/iam/admin/sellers",
                    json={"email": f"s{i}@bench.example", "full_name": "Bench"},
                )
                r.raise_for_status()
                committed = time.perf_counter()
                out.append(await asyncio.wait_for(arrived.get(), 120) - committed)
    finally:
        await connection.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="idle window")
    parser.add_argument("--events", type=int, default=5, help="events timed per database")
    parser.add_argument("--pause", type=float, default=3.0, help="idle seconds before each")
    parser.add_argument(
        "--settle", type=float, default=2.0, help="seconds left to start-up work before the window"
    )
    parser.add_argument("--smoke", action="store_true", help="SQLite only, short")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.events, args.pause, args.settle = 0.5, 1, 0.2, 0.2
    pg_base = None if args.smoke else postgres_base_url()
    databases: list[str | None] = [None] + ([pg_base] if pg_base else [])
    for base_url in databases:
        label = "postgresql" if base_url else "sqlite"
        for dispatcher in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                url = asyncio.run(create_pg_database(base_url)) if base_url else None
                try:
                    env = environment(Path(tmp), url, dispatcher)
                    with serving(env, Path(tmp)) as (proc, base):
                        cpu = idle_cpu(proc.pid, args.seconds, args.settle)
                        print(
                            f"{label:10} dispatcher {'on ' if dispatcher else 'off'}: "
                            f"idle CPU {cpu:5.2f} % of a core over {args.seconds:g} s",
                            flush=True,
                        )
                        if not dispatcher or not args.events:
                            continue
                        got = asyncio.run(latencies(base, args.events, args.pause))
                        print(
                            f"{label:10} one event, commit -> queue: median "
                            f"{1000 * statistics.median(got):.0f} ms, max "
                            f"{1000 * max(got):.0f} ms ({len(got)} events, "
                            f"{args.pause:.1f} s idle before each)",
                            flush=True,
                        )
                finally:
                    if base_url and url:
                        asyncio.run(drop_pg_database(base_url, url))
    if pg_base is None and not args.smoke:
        print("postgresql: not reachable, skipped")


if __name__ == "__main__":
    main()
