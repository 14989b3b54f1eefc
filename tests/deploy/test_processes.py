"""N service processes and M workers on one PostgreSQL database and one RabbitMQ, as
docs/deployment.md runs them: two `serve` processes (one uvicorn worker each, no
dispatcher) and two `cloudadmin worker`s, migrated once first.

Writes go through both servers at once; no write may be lost, every event is published
once, and each writer's events arrive in the order it wrote them."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import OUTBOUND_ALLOW
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.deploy.processes import Process, cli, start, start_server, wait_ready
from tests.events.conftest import Inbox, inbox, rabbit_url  # noqa: F401 (fixtures)
from tests.importer.documents import example

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RESELLER_ACCOUNT = 1000
RESELLER_ADMIN = 10  # a user of EXAMPLE, administrator of the reseller account
WRITES = 12  # per chain of sequential writes


@dataclass
class Deployment:
    servers: list[Process]
    workers: list[Process]
    key: str

    def logs(self) -> str:
        return "\n".join(p.tail() for p in [*self.servers, *self.workers])


@pytest.fixture
async def database() -> AsyncIterator[str]:
    """A PostgreSQL database of its own, dropped afterwards."""
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    url = await create_pg_database(base)
    try:
        yield url
    finally:
        await drop_pg_database(base, url)


@pytest.fixture
async def deployment(database: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    # The settings that must match across processes (deployment.md): one database, one
    # secret key, one blob directory, one outbound allow-list. The servers leave delivery
    # to the workers.
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database,
        "CLOUDADMIN_SECRET_KEY": "deploy-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
        "CLOUDADMIN_BLOB_DIR": str(tmp_path / "blobs"),
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        "CLOUDADMIN_RUN_DISPATCHER": "false",
        "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.1",
    }
    migrated = cli("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    document = tmp_path / "landscape.json"
    document.write_text(json.dumps(example()))
    loaded = cli("load", str(document), env=env)
    assert loaded.returncode == 0, loaded.stderr
    made = cli("apikey", "create", "--user", str(RESELLER_ADMIN), "--name", "deploy", env=env)
    assert made.returncode == 0, made.stderr
    processes: list[Process] = []
    try:
        servers = [start_server(f"serve-{n}", env, tmp_path) for n in "ab"]
        processes += servers
        workers = [start(f"worker-{n}", ["worker"], env, tmp_path) for n in "12"]
        processes += workers
        await wait_ready(servers)
        yield Deployment(servers, workers, made.stdout.strip())
    finally:
        for process in processes:
            process.stop()


@dataclass(frozen=True)
class Write:
    chain: str
    request_id: str
    method: str
    path: str
    body: dict[str, Any]


def chains() -> dict[str, list[Write]]:
    """Sequences of writes; each sequence is sent in order, all sequences at once."""

    def client_user(chain: str, i: int) -> Write:
        return Write(chain, f"{chain}-{i}", "POST",
                     f"/iam/clients/{RESELLER_ACCOUNT}/client-users/create",
                     {"username": f"{chain}-{i}@acme.example", "name": f"{chain} {i}",
                      "password": secrets.token_urlsafe(18),
                      "user_role": {"id": 5, "name": "Engineers"}})

    def patch(chain: str, i: int, field: str, value: str) -> Write:
        return Write(chain, f"{chain}-{i}", "PATCH", f"/iam/users/{RESELLER_ADMIN}",
                     {field: value})

    return {
        # New records through each server: all present afterwards, with distinct ids.
        "create-a": [client_user("create-a", i) for i in range(WRITES)],
        "create-b": [client_user("create-b", i) for i in range(WRITES)],
        # One record, different fields through different servers: neither write may
        # undo the other.
        "phone-b": [patch("phone-b", i, "phone", f"+49 30 {i:04}") for i in range(WRITES)],
        # One record, one field through both servers: it ends as one of the last writes.
        "name-a": [patch("name-a", i, "name", f"name-a {i}") for i in range(WRITES)],
        "name-b": [patch("name-b", i, "name", f"name-b {i}") for i in range(WRITES)],
    }


SERVER_OF = {"create-a": 0, "name-a": 0, "create-b": 1, "phone-b": 1, "name-b": 1}


async def send_chain(client: httpx.AsyncClient, base: str, key: str,
                     writes: list[Write]) -> list[str]:
    """Sends the writes one after the other; returns what went wrong."""
    problems = []
    for write in writes:
        answer = await client.request(
            write.method, f"{base}{write.path}", json=write.body,
            headers={"Authorization": f"apikey {key}", "X-Request-ID": write.request_id})
        if answer.status_code != 200:
            problems.append(f"{write.request_id}: {answer.status_code} {answer.text[:200]}")
    return problems


async def wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


class TestTwoServersTwoWorkersOneDatabase:
    async def test_concurrent_writes_lose_nothing_and_publish_each_event_once_in_order(
        self, deployment: Deployment, inbox: Inbox, rabbit_url: str,  # noqa: F811
    ):
        first, second = (s.base_url for s in deployment.servers)
        auth = {"Authorization": f"apikey {deployment.key}"}
        async with httpx.AsyncClient(timeout=60) as client:
            subscribed = await client.post(
                f"{first}/cloud/v1/user_actions/subscribe_amqp", headers=auth,
                json={"connection_string": rabbit_url, "exchange": inbox.exchange,
                      "routing_key": inbox.routing_key})
            assert subscribed.status_code == 204, subscribed.text

            plan = chains()
            results = await asyncio.gather(*(
                send_chain(client, (first, second)[SERVER_OF[name]], deployment.key, writes)
                for name, writes in plan.items()))
            problems = [p for chain in results for p in chain]
            assert problems == [], "writes refused:\n" + "\n".join(problems)

            # No lost update: every created user is there, once, under its own id, and
            # both servers read the same.
            listings = [(await client.get(f"{base}/iam/users", headers=auth)).json()
                        for base in (first, second)]
            assert listings[0] == listings[1]
            created = {w.body["username"] for c in ("create-a", "create-b") for w in plan[c]}
            users = [u for u in listings[0]["results"] if u["email"] in created]
            assert sorted(u["email"] for u in users) == sorted(created), "created users lost"
            assert len({u["id"] for u in users}) == len(created), "two users share an id"

            states = [(await client.get(f"{base}/iam/users/{RESELLER_ADMIN}",
                                        headers=auth)).json() for base in (first, second)]
            assert states[0] == states[1]
            admin = states[0]
            assert admin["phone"] == plan["phone-b"][-1].body["phone"], "a phone write lost"
            last_names = {plan["name-a"][-1].body["name"], plan["name-b"][-1].body["name"]}
            assert admin["name"] in last_names

            # Every event published once: each write's event arrives, none twice.
            expected = {w.request_id for writes in plan.values() for w in writes}

            def published() -> list[dict[str, Any]]:
                bodies = [json.loads(m.body) for m in inbox.received]
                return [b for b in bodies if b["request_id"] in expected]

            arrived = await wait_for(lambda: {b["request_id"] for b in published()}
                                     >= expected, 90)
            missing = sorted(expected - {b["request_id"] for b in published()})
            assert arrived, f"{len(missing)} events not published within 90 s: " \
                f"{missing[:10]}\n{deployment.logs()}"
            await asyncio.sleep(1.0)  # a late duplicate would show up now
            bodies = published()
            twice = [rid for rid, n in Counter(b["request_id"] for b in bodies).items() if n > 1]
            assert twice == [], f"published more than once: {twice}"
            assert {m.message_id for m in inbox.received} >= {b["id"] for b in bodies}

            # The published events are the log's, one for one.
            log = (await client.get(f"{second}/cloud/v1/user_actions", headers=auth,
                                    params={"limit": 1000})).json()["results"]
            logged = {r["id"]: r for r in log if r["request_id"] in expected}
            assert {x["id"] for x in bodies} == set(logged)

            # In commit order per subscription: each writer's events in the order it
            # wrote, and the last name event is the name the record kept.
            order = [x["request_id"] for x in bodies]
            for name, writes in plan.items():
                sent = [w.request_id for w in writes]
                assert [rid for rid in order if rid.startswith(f"{name}-")] == sent, name
            names = [x["action_data"]["name"] for x in bodies
                     if x["request_id"].startswith("name-")]
            assert names[-1] == admin["name"], "the last name event is not the record's"

            for server in deployment.servers:
                metrics = await client.get(f"{server.base_url}/metrics")
                # needs /metrics (observability branch): tighten to == 200 after the merge.
                assert metrics.status_code in (200, 404), (server.name, metrics.status_code)

        assert all(w.proc.poll() is None for w in deployment.workers), deployment.logs()
        assert [w.stop() for w in deployment.workers] == [0, 0], deployment.logs()
