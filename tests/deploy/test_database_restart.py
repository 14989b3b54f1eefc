"""PostgreSQL goes away under load and comes back: every change the API acknowledged
still reaches its webhook exactly once, and SIGTERM still ends the processes in time.

The database is reached through a TCP proxy the test cuts (tests/cutproxy.py): every
connection reset and new ones refused for two seconds, as a restart of the server does,
without restarting the server the rest of the suite shares. Three layouts: `serve`
with its dispatcher inside, `serve --workers 2` (one dispatches, one stands by), and
`serve` without a dispatcher beside a `cloudadmin worker`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.test_serve import DOCUMENT
from tests.conftest import OUTBOUND_ALLOW
from tests.cutproxy import CutProxy, cut_proxy
from tests.deploy.processes import Process, cli, start, wait_ready
from tests.events.receiver import Receiver
from tests.events.test_cancellation import GatedReceiver
from tests.scrape import scrape
from tests.servers import free_port
from tests.waiting import until

pytestmark = pytest.mark.slow
# The processes run beside the test; blocking process calls are fine here.
# ruff: noqa: ASYNC220, ASYNC221, ASYNC251

KEY = {"Authorization": "apikey 2_reseller-secret"}
WRITERS = 4
# Changes acknowledged before the first cut, between the cuts and after the second.
PER_PHASE = 12
CUT_SECONDS = 2.0
GRACE = 2  # CLOUDADMIN_SHUTDOWN_GRACE_SECONDS of the processes
# What a process may take beyond its grace to end: unwinding, closing, Python's exit,
# on a busy machine.
EXIT_MARGIN = 12.0
LAYOUTS = ["serve", "serve --workers 2", "worker"]
ANSWER_SECONDS = 0.05
# Every acknowledged change at its webhook this long after the writes end, at most: well
# within a lease (60 s), which a subscription whose lease was not given back waits for.
CATCH_UP_SECONDS = 30


@pytest.fixture
def proxy(database_url: str, app: object) -> Iterator[CutProxy]:
    """The test database (emptied by ``app``) behind a proxy the test can cut."""
    if not database_url.startswith("postgresql"):
        pytest.skip("a database server that restarts: PostgreSQL")
    with cut_proxy(database_url) as p:
        yield p


class SlowReceiver(Receiver):
    """A receiver that takes ``ANSWER_SECONDS`` to answer, as real ones do: the lane is
    then in the middle of a request, not of a database statement, when the database
    goes."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(ANSWER_SECONDS)
        await super().__call__(scope, receive, send)


def environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "database-restart-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
        "CLOUDADMIN_LOG_LEVEL": "INFO",
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.1",
        "CLOUDADMIN_SHUTDOWN_GRACE_SECONDS": str(GRACE),
    }


async def start_layout(
    layout: str, env: dict[str, str], logs: Path
) -> tuple[Process, list[Process]]:
    """The API server of ``layout``, ready, and every process it has (the worker's
    dispatcher started)."""
    port = free_port()
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port)]
    if layout == "serve --workers 2":
        serve += ["--workers", "2"]
    if layout == "worker":
        env = {**env, "CLOUDADMIN_RUN_DISPATCHER": "false"}
    server = start("serve", serve, env, logs)
    server.base_url = f"http://127.0.0.1:{port}"
    processes = [server]
    try:
        await wait_ready([server])  # it has migrated the schema
        if layout == "worker":
            worker = start("worker", ["worker"], env, logs)
            processes.append(worker)
            await until(
                lambda: " started" in worker.log.read_text(),
                lambda: f"the worker to start\n{worker.tail()}",
                timeout=90,
            )
    except BaseException:
        for p in processes:
            p.stop()
        raise
    return server, processes


def load(database_url: str, tmp_path: Path) -> None:
    doc = tmp_path / "landscape.json"
    doc.write_text(json.dumps(DOCUMENT))
    loaded = cli("load", str(doc), env=environment(database_url, tmp_path))
    assert loaded.returncode == 0, loaded.stderr


async def subscribe(client: httpx.AsyncClient, url: str) -> None:
    r = await client.post(
        "/cloud/v1/user_actions/subscribe",
        json={"url": url, "auth_header_name": "X-Hook-Auth", "auth_header_value": "hook-secret"},
    )
    assert r.status_code in (200, 201, 204), r.text


def sellers_received(receiver: Receiver) -> set[str]:
    return {
        res["resource_id"]
        for got in receiver.accepted
        if got.body.get("api_group") == "seller"
        for res in got.body.get("resources", [])
    }


def story(process: Process, lines: int = 40) -> str:
    """What a process logged, less the access log's lines."""
    text = process.log.read_text(errors="replace") if process.log.exists() else ""
    kept = [ln for ln in text.splitlines() if "cloudadmin.access" not in ln]
    return f"--- {process.name} (exit {process.proc.poll()}) ---\n" + "\n".join(kept[-lines:])


def message_ids(receiver: Receiver) -> dict[str, set[str]]:
    """Per seller created: the message ids its event arrived under."""
    ids: dict[str, set[str]] = {}
    for got in receiver.accepted:
        if got.body.get("api_group") == "seller":
            for res in got.body.get("resources", []):
                ids.setdefault(res["resource_id"], set()).add(got.headers["x-message-id"])
    return ids


def stopped_within(processes: list[Process], seconds: float) -> dict[str, float]:
    """SIGTERM to each, then how long each took to end (fails naming one that did not)."""
    started = time.monotonic()
    for p in processes:
        p.proc.send_signal(signal.SIGTERM)
    took = {}
    for p in processes:
        left = max(seconds - (time.monotonic() - started), 0.1)
        try:
            p.proc.wait(timeout=left)
        except Exception:
            raise AssertionError(
                f"{p.name} still running {seconds:g} s after SIGTERM\n{p.tail(40)}"
            ) from None
        took[p.name] = time.monotonic() - started
    return took


class TestDatabaseRestart:
    @pytest.mark.parametrize("layout", LAYOUTS, ids=["serve", "serve-2-workers", "worker"])
    async def test_every_acknowledged_change_arrives_once(
        self, layout: str, proxy: CutProxy, database_url: str, tmp_path: Path
    ):
        load(database_url, tmp_path)
        receiver = SlowReceiver()
        await receiver.start()
        env = environment(proxy.url(database_url), tmp_path)
        server, processes = await start_layout(layout, env, tmp_path)
        acknowledged: set[str] = set()
        errors: Counter[str] = Counter()
        enough = asyncio.Event()

        async def writer(n: int, client: httpx.AsyncClient) -> None:
            i = 0
            while not enough.is_set():
                i += 1
                body = {"email": f"w{n}-{i}@restart.example", "full_name": f"Writer {n}"}
                try:
                    r = await client.post("/iam/admin/sellers", json=body)
                except httpx.TransportError as exc:
                    errors[type(exc).__name__] += 1
                    await asyncio.sleep(0.05)
                    continue
                if r.is_success:
                    acknowledged.add(str(r.json()["id"]))
                else:
                    errors[str(r.status_code)] += 1
                    await asyncio.sleep(0.05)  # the database is away: 503

        async def acknowledged_more(count: int) -> None:
            target = len(acknowledged) + count
            await until(
                lambda: len(acknowledged) >= target,
                lambda: f"{target} acknowledged changes, {len(acknowledged)} ({dict(errors)})",
                timeout=90,
            )

        try:
            async with httpx.AsyncClient(base_url=server.base_url, headers=KEY, timeout=30) as c:
                await subscribe(c, receiver.url)
                writers = [asyncio.create_task(writer(n, c)) for n in range(WRITERS)]
                try:
                    await acknowledged_more(PER_PHASE)
                    for _ in range(2):  # two restarts, under the writers
                        proxy.cut()
                        await asyncio.sleep(CUT_SECONDS)  # the server is down this long
                        proxy.restore()
                        await acknowledged_more(PER_PHASE)
                finally:
                    enough.set()
                    await asyncio.gather(*writers)
            cut_at = time.monotonic()
            await until(
                lambda: acknowledged <= sellers_received(receiver),
                lambda: (
                    f"every acknowledged change at its webhook: "
                    f"{len(acknowledged - sellers_received(receiver))} of {len(acknowledged)} "
                    f"missing\n" + "\n".join(story(p) for p in processes)
                ),
                timeout=CATCH_UP_SECONDS,
            )
            caught_up = time.monotonic() - cut_at
            ids = Counter(got.headers["x-message-id"] for got in receiver.accepted)
            again = {i: n for i, n in ids.items() if n > 1}
            print(
                f"{layout}: {len(acknowledged)} acknowledged, {len(ids)} delivered, "
                f"{len(again)} more than once ({sum(again.values()) - len(again)} extra), "
                f"caught up {caught_up:.1f} s after the writes; {dict(errors)}"
            )
            # Exactly once: a batch the receiver took while the database was away is
            # marked when it is back (within the lease), not sent again; and one change
            # is one message id.
            assert not again, f"{len(again)} messages arrived more than once\n" + "\n".join(
                story(p) for p in processes
            )
            assert all(len(ids) == 1 for ids in message_ids(receiver).values())
            if layout != "worker":
                # The watchdog's gauges: one dispatcher among the processes, at work again.
                async with httpx.AsyncClient(base_url=server.base_url) as c:
                    samples = await scrape(c)
                assert samples.get("cloudadmin_dispatcher_active") == 1
                assert samples.get("cloudadmin_dispatcher_stalled") == 0
            took = stopped_within(processes, GRACE + EXIT_MARGIN)
            print(f"{layout}: stopped in {took}")
        finally:
            for p in processes:
                p.stop()
            await receiver.stop()


class TestSigtermWithoutDatabase:
    @pytest.mark.parametrize("outage", ["cut", "frozen"])
    @pytest.mark.parametrize("layout", ["serve", "worker"])
    async def test_ends_within_the_grace_whatever_the_dispatcher_waits_on(
        self, layout: str, outage: str, proxy: CutProxy, database_url: str, tmp_path: Path
    ):
        # The database goes and stays away while a lane is in the middle of a batch;
        # then SIGTERM. The process ends within its grace (and a margin), whatever its
        # dispatcher was doing.
        load(database_url, tmp_path)
        receiver = GatedReceiver()
        await receiver.start()
        env = environment(proxy.url(database_url), tmp_path)
        server, processes = await start_layout(layout, env, tmp_path)
        try:
            async with httpx.AsyncClient(base_url=server.base_url, headers=KEY, timeout=30) as c:
                await subscribe(c, receiver.url)  # itself a user action owed to it
            await until(lambda: receiver.arrived >= 1, "the dispatcher to post", timeout=60)
            margin = EXIT_MARGIN
            if outage == "cut":
                # Every connection reset, new ones refused; the receiver still holds
                # the request.
                proxy.cut()
                async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as c:

                    async def database_away() -> bool:
                        return (await c.get("/readyz")).status_code == 503

                    await until(database_away, "the server to see the database away", timeout=60)
            else:
                # Connections open, nothing comes back, while the lane marks the batch
                # it has sent: it waits on a statement that never ends.
                proxy.freeze()
                receiver.gate.set()
                await until(lambda: len(receiver.accepted) >= 1, "the receiver to answer")
                margin += 10
            took = stopped_within(processes, GRACE + margin)
            print(f"{layout}, database {outage}: stopped in {took}")
        finally:
            for p in processes:
                p.stop()
            receiver.gate.set()
            await receiver.stop()
