"""Every counter is on /metrics from the start, at 0 (docs/operations.md, "What it
exposes"), so that alerts can be written before the first event: on a fresh `serve`'s
/metrics (its workers' shared files) and on a fresh `worker`'s metrics port, both real
processes. The counters are found in the registry, so a new one is covered."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY

import cloudadmin.app  # noqa: F401  (defines every metric the service counts into)
from cloudadmin.events.queues import AMQP, WEBHOOK
from cloudadmin.observability import metrics
from tests.scrape import Samples
from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

# Its series are the requests themselves (route, method, status): none before the first.
BY_REQUEST = {"cloudadmin_http_requests"}
# The series a labelled counter starts with; a new labelled counter is added here.
LABELLED = {
    "cloudadmin_event_deliveries": [{"kind": q.name} for q in (AMQP, WEBHOOK)],
    "cloudadmin_event_delivery_failures": [{"kind": q.name} for q in (AMQP, WEBHOOK)],
    "cloudadmin_throttled_requests": [{"limit": "auth_failures"}, {"limit": "api_key"}],
}


def counters() -> set[str]:
    """The service's counter families as the registry knows them (their names without
    ``_total``)."""
    return {
        family.name
        for family in REGISTRY.collect()
        if family.type == "counter" and family.name.startswith("cloudadmin_")
    }


def problems(samples: Samples) -> list[str]:
    found = []
    for name in sorted(counters() - BY_REQUEST):
        series = samples.labels_of(f"{name}_total")
        expected = LABELLED.get(name, [{}])
        if sorted(map(sorted_items, series)) != sorted(map(sorted_items, expected)):
            found.append(f"{name}_total: series {series}, expected {expected}")
        found += [
            f"{name}_total{labels} is {samples.get(f'{name}_total', **labels)}, not 0"
            for labels in series
            if samples.get(f"{name}_total", **labels) != 0
        ]
    return found


def sorted_items(labels: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(labels.items())


def test_the_registry_holds_the_counters_this_test_knows():
    # The discovery itself: were it to find nothing, the checks below would pass idly.
    assert {
        "cloudadmin_event_deliveries",
        "cloudadmin_mail_sent",
        "cloudadmin_throttled_requests",
        "cloudadmin_auth_failures",
    } <= counters()
    assert set(LABELLED) <= counters()


def test_the_label_values_are_the_ones_counted():
    # The dispatcher counts by its queue's name, the throttle by its limit's.
    assert {AMQP.name, WEBHOOK.name} == set(metrics.SUBSCRIPTION_KINDS)
    assert [v["limit"] for v in LABELLED["cloudadmin_throttled_requests"]] == list(
        metrics.THROTTLE_LIMITS
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_")},
        "CLOUDADMIN_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}",
        "CLOUDADMIN_SECRET_KEY": "metrics-from-zero",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
        "CLOUDADMIN_RUN_DISPATCHER": "false",
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return environment


@contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", *args], env=env, stdout=out, stderr=out
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


def scrape_when_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> Samples:
    deadline = time.monotonic() + 120
    while True:
        try:
            r = httpx.get(url, timeout=5)
            assert r.status_code == 200, r.text
            return Samples(r.text)
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no metrics at {url}:\n{log.read_text()}") from None
        time.sleep(0.05)


def test_a_fresh_serve_and_worker_show_every_counter_at_zero(env: dict[str, str], tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with process(["serve", "--port", str(port)], env, log) as serve:
        wait_until_healthy(base, serve, log.read_text)
        served = scrape_when_up(f"{base}/metrics", serve, log)
    assert problems(served) == []

    # The worker on the database serve migrated, its metrics from its own memory.
    worker_port = free_port()
    worker_log = tmp_path / "worker.log"
    worker_env = {**env, "CLOUDADMIN_WORKER_METRICS_PORT": str(worker_port)}
    with process(["worker"], worker_env, worker_log) as worker:
        from_worker = scrape_when_up(f"http://127.0.0.1:{worker_port}/metrics", worker, worker_log)
    assert problems(from_worker) == []
