"""N service processes and M workers on one PostgreSQL database and one RabbitMQ, as
docs/deployment.md runs them: two `serve` processes (one uvicorn worker each, no
dispatcher) and two `cloudadmin worker`s, migrated once first.

One scenario (the `outcome` fixture, run once for the module) writes through both
servers at once; each test checks one promise about what came of it."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import httpx
import pytest
import pytest_asyncio

from tests.conftest import OUTBOUND_ALLOW
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.deploy.processes import Process, cli, start, start_server, wait_ready
from tests.events.conftest import rabbit_url  # noqa: F401 (fixture: RabbitMQ or skip/fail)
from tests.importer.documents import example

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RESELLER_ACCOUNT = 1000
RESELLER_ADMIN = 10  # a user of EXAMPLE, administrator of the reseller account
WRITES = 12  # per chain of sequential writes
EVENTS_DEADLINE = 90  # seconds for every event to reach the queue


@dataclass
class Deployment:
    servers: list[Process]
    workers: list[Process]
    key: str

    def logs(self) -> str:
        return "\n".join(p.tail() for p in [*self.servers, *self.workers])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
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


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def deployment(
    database: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Deployment]:
    tmp = tmp_path_factory.mktemp("deployment")
    # The settings that must match across processes (deployment.md): one database, one
    # secret key, one blob directory, one outbound allow-list. The servers leave delivery
    # to the workers.
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database,
        "CLOUDADMIN_SECRET_KEY": "deploy-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp / "data"),
        "CLOUDADMIN_BLOB_DIR": str(tmp / "blobs"),
        "CLOUDADMIN_OUTBOUND_ALLOW": ",".join(OUTBOUND_ALLOW),
        "CLOUDADMIN_RUN_DISPATCHER": "false",
        "CLOUDADMIN_DISPATCHER_POLL_SECONDS": "0.1",
    }
    migrated = cli("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    document = tmp / "landscape.json"
    document.write_text(json.dumps(example()))
    loaded = cli("load", str(document), env=env)
    assert loaded.returncode == 0, loaded.stderr
    made = cli("apikey", "create", "--user", str(RESELLER_ADMIN), "--name", "deploy", env=env)
    assert made.returncode == 0, made.stderr
    processes: list[Process] = []
    try:
        servers = [start_server(f"serve-{n}", env, tmp) for n in "ab"]
        processes += servers
        workers = [start(f"worker-{n}", ["worker"], env, tmp) for n in "12"]
        processes += workers
        await wait_ready(servers)
        yield Deployment(servers, workers, made.stdout.strip())
    finally:
        for process in processes:
            process.stop()


@dataclass
class Queue:
    """A queue bound to a fresh exchange, and the messages that arrived, in order."""

    exchange: str
    routing_key: str
    received: list[aio_pika.abc.AbstractIncomingMessage] = field(default_factory=list)

    async def on_message(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        self.received.append(message)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def queue(rabbit_url: str) -> AsyncIterator[Queue]:  # noqa: F811
    connection = await aio_pika.connect_robust(rabbit_url)
    try:
        channel = await connection.channel()
        name = f"deploy-{uuid.uuid4().hex[:8]}"
        exchange = await channel.declare_exchange(
            name, aio_pika.ExchangeType.DIRECT, auto_delete=True
        )
        amqp_queue = await channel.declare_queue(name, exclusive=True)
        await amqp_queue.bind(exchange, routing_key="user.actions")
        box = Queue(name, "user.actions")
        await amqp_queue.consume(box.on_message, no_ack=True)
        yield box
    finally:
        await connection.close()


@dataclass(frozen=True)
class Write:
    chain: str
    request_id: str
    method: str
    path: str
    body: dict[str, Any]


def client_user(chain: str, i: int) -> Write:
    """A new user of the reseller's account: one event on its subscription."""
    return Write(
        chain,
        f"{chain}-{i}",
        "POST",
        f"/iam/clients/{RESELLER_ACCOUNT}/client-users/create",
        {
            "username": f"{chain}-{i}@acme.example",
            "name": f"{chain} {i}",
            "password": secrets.token_urlsafe(18),
            "user_role": {"id": 5, "name": "Engineers"},
        },
    )


def chains() -> dict[str, list[Write]]:
    """Sequences of writes; each sequence is sent in order, all sequences at once."""

    def patch(chain: str, i: int, name: str, value: str) -> Write:
        return Write(chain, f"{chain}-{i}", "PATCH", f"/iam/users/{RESELLER_ADMIN}", {name: value})

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


@dataclass
class Outcome:
    deployment: Deployment
    plan: dict[str, list[Write]]
    refused: list[str]  # writes not answered 200
    users: list[list[dict[str, Any]]]  # GET /iam/users through each server
    admin: list[dict[str, Any]]  # GET /iam/users/{RESELLER_ADMIN} through each server
    messages: list[aio_pika.abc.AbstractIncomingMessage]  # of the writes, in arrival order
    missing: list[str]  # request ids whose event did not arrive in time
    # Why a late duplicate could still come (the marker written after the events did not
    # arrive); None once it did.
    unsettled: str | None
    log: list[dict[str, Any]]  # the user-action log's records of the writes
    metrics: dict[str, int]  # status of GET /metrics per server, negative without counts

    @property
    def expected(self) -> set[str]:
        return {w.request_id for writes in self.plan.values() for w in writes}

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(m.body) for m in self.messages]


async def send_chain(
    client: httpx.AsyncClient, base: str, key: str, writes: list[Write]
) -> list[str]:
    """Sends the writes one after the other; returns those not answered 200."""
    refused = []
    for write in writes:
        answer = await client.request(
            write.method,
            f"{base}{write.path}",
            json=write.body,
            headers={"Authorization": f"apikey {key}", "X-Request-ID": write.request_id},
        )
        if answer.status_code != 200:
            refused.append(f"{write.request_id}: {answer.status_code} {answer.text[:200]}")
    return refused


def of_writes(queue: Queue, expected: set[str]) -> list[aio_pika.abc.AbstractIncomingMessage]:
    return [m for m in queue.received if json.loads(m.body)["request_id"] in expected]


async def arrivals(queue: Queue, wanted: set[str], timeout: float) -> set[str]:
    """The request ids of ``wanted`` whose events reached the queue, once all have or
    ``timeout`` seconds have passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        arrived = {json.loads(m.body)["request_id"] for m in queue.received} & wanted
        if arrived >= wanted or loop.time() > deadline:
            return arrived
        await asyncio.sleep(0.1)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcome(rabbit_url: str, deployment: Deployment, queue: Queue) -> Outcome:  # noqa: F811
    first, second = (s.base_url for s in deployment.servers)
    auth = {"Authorization": f"apikey {deployment.key}"}
    plan = chains()
    expected = {w.request_id for writes in plan.values() for w in writes}
    async with httpx.AsyncClient(timeout=60) as client:
        subscribed = await client.post(
            f"{first}/cloud/v1/user_actions/subscribe_amqp",
            headers=auth,
            json={
                "connection_string": rabbit_url,
                "exchange": queue.exchange,
                "routing_key": queue.routing_key,
            },
        )
        assert subscribed.status_code == 204, subscribed.text

        results = await asyncio.gather(
            *(
                send_chain(client, (first, second)[SERVER_OF[name]], deployment.key, writes)
                for name, writes in plan.items()
            )
        )

        users = [
            (await client.get(f"{base}/iam/users", headers=auth)).json()["results"]
            for base in (first, second)
        ]
        admin = [
            (await client.get(f"{base}/iam/users/{RESELLER_ADMIN}", headers=auth)).json()
            for base in (first, second)
        ]

        arrived = await arrivals(queue, expected, EVENTS_DEADLINE)
        # A subscription's events go out in the order they were written (TestEvents
        # checks it per writer), so a marker written after them arrives after them: once
        # it has, a second copy of any of them would have arrived before it.
        marker = client_user("marker", 0)
        unsettled = None
        if refused := await send_chain(client, second, deployment.key, [marker]):
            unsettled = f"the marker was refused: {refused}"
        elif not await arrivals(queue, {marker.request_id}, EVENTS_DEADLINE):
            unsettled = f"the marker did not arrive within {EVENTS_DEADLINE} s"

        log = (
            await client.get(
                f"{second}/cloud/v1/user_actions", headers=auth, params={"limit": 1000}
            )
        ).json()["results"]
        metrics = {}
        for server in deployment.servers:
            scrape = await client.get(f"{server.base_url}/metrics")
            # Answering, and with this server's own request counts in it.
            counted = 'method="POST"' in scrape.text and "cloudadmin_http_requests_total" in (
                scrape.text
            )
            metrics[server.name] = scrape.status_code if counted else -scrape.status_code
    return Outcome(
        deployment=deployment,
        plan=plan,
        refused=[p for chain in results for p in chain],
        users=users,
        admin=admin,
        messages=of_writes(queue, expected),
        missing=sorted(expected - arrived),
        unsettled=unsettled,
        log=[r for r in log if r["request_id"] in expected],
        metrics=metrics,
    )


class TestConcurrentWrites:
    def test_every_write_through_either_server_is_accepted(self, outcome: Outcome):
        assert outcome.refused == []

    def test_every_created_user_is_there_once_with_its_own_id(self, outcome: Outcome):
        created = sorted(
            w.body["username"] for c in ("create-a", "create-b") for w in outcome.plan[c]
        )
        users = [u for u in outcome.users[0] if u["email"] in created]
        assert sorted(u["email"] for u in users) == created
        assert len({u["id"] for u in users}) == len(created), "two users share an id"

    def test_both_servers_read_the_same(self, outcome: Outcome):
        assert outcome.users[0] == outcome.users[1]
        assert outcome.admin[0] == outcome.admin[1]

    def test_a_field_written_through_one_server_survives_another_fields_writes(
        self, outcome: Outcome
    ):
        assert outcome.admin[0]["phone"] == outcome.plan["phone-b"][-1].body["phone"]

    def test_a_field_written_through_both_servers_ends_as_one_of_the_last_writes(
        self, outcome: Outcome
    ):
        last = {outcome.plan["name-a"][-1].body["name"], outcome.plan["name-b"][-1].body["name"]}
        assert outcome.admin[0]["name"] in last


class TestEvents:
    def test_every_write_is_published(self, outcome: Outcome):
        assert outcome.missing == [], (
            f"{len(outcome.missing)} events not published within {EVENTS_DEADLINE} s\n"
            f"{outcome.deployment.logs()}"
        )

    def test_none_is_published_twice(self, outcome: Outcome):
        assert outcome.unsettled is None, f"{outcome.unsettled}\n{outcome.deployment.logs()}"
        counts = Counter(b["request_id"] for b in outcome.bodies)
        assert [rid for rid, n in counts.items() if n > 1] == []

    def test_messages_are_the_logs_records(self, outcome: Outcome):
        assert [m.message_id for m in outcome.messages] == [b["id"] for b in outcome.bodies]
        assert sorted(b["id"] for b in outcome.bodies) == sorted(r["id"] for r in outcome.log)

    def test_each_writers_events_arrive_in_the_order_it_wrote(self, outcome: Outcome):
        order = [b["request_id"] for b in outcome.bodies]
        for name, writes in outcome.plan.items():
            arrived = [rid for rid in order if rid.startswith(f"{name}-")]
            assert arrived == [w.request_id for w in writes], name

    def test_the_last_name_event_is_the_name_the_record_kept(self, outcome: Outcome):
        # Two servers wrote the field; the commit that won is the last one published.
        names = [
            b["action_data"]["name"] for b in outcome.bodies if b["request_id"].startswith("name-")
        ]
        assert names and names[-1] == outcome.admin[0]["name"]


class TestProcesses:
    def test_each_server_answers_metrics(self, outcome: Outcome):
        assert len(outcome.metrics) == 2
        assert all(status == 200 for status in outcome.metrics.values()), outcome.metrics

    def test_workers_run_throughout_and_stop_cleanly(self, outcome: Outcome):
        workers = outcome.deployment.workers
        assert all(w.proc.poll() is None for w in workers), outcome.deployment.logs()
        assert [w.stop() for w in workers] == [0, 0], outcome.deployment.logs()
