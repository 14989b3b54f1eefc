"""A real `cloudadmin serve --workers 2` on SQLite: /metrics adds up what every worker
counted, and with CLOUDADMIN_LOG_FORMAT=json each request is one JSON line on stderr
(uvicorn's own access line is not written), carrying the activity-log row's request id."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.test_serve import DOCUMENT, cli
from tests.scrape import scrape_sync
from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

HITS = 40
RESELLER_KEY = {"Authorization": "apikey 2_reseller-secret"}
LOG = "/iam/activity_log/requests"


@dataclass
class Served:
    base: str
    proc: subprocess.Popen[str]
    stderr: Path
    database: Path

    def stop(self) -> str:
        """Stops the server (its workers write their last lines first) and returns its
        stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        return self.stderr.read_text()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: the metrics test counts from what it finds, and the
    access-log test, last, stops it to read every line."""
    tmp_path = tmp_path_factory.mktemp("metrics-serve")
    database = tmp_path / "serve.db"
    env = {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "CLOUDADMIN_SECRET_KEY": "serve-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
        "CLOUDADMIN_LOG_FORMAT": "json",
        "CLOUDADMIN_LOG_LEVEL": "INFO",
        "CLOUDADMIN_RUN_DISPATCHER": "false",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    doc = tmp_path / "landscape.json"
    doc.write_text(json.dumps(DOCUMENT))
    loaded = cli("load", str(doc), env=env)
    assert loaded.returncode == 0, loaded.stderr
    port = free_port()
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as err:
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
                "--workers",
                "2",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    served = Served(f"http://127.0.0.1:{port}", proc, stderr, database)
    try:
        wait_until_healthy(served.base, proc)
        yield served
    finally:
        served.stop()


def hit(base: str, path: str) -> httpx.Response:
    # A connection of its own per request: the workers share the listening socket, so
    # the requests are spread over both.
    return httpx.get(f"{base}{path}", timeout=30)


def access_lines(stderr: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [line for line in lines if line["logger"] == "cloudadmin.access"]


class TestMultiprocessMetrics:
    def test_counter_sums_every_worker(self, served: Served):
        # wait_until_healthy's own probes were counted as well: start from what is there.
        start = scrape_sync(served.base).get(
            "cloudadmin_http_requests_total", method="GET", route="/healthz", status="200"
        )
        hits = 0
        # Until both workers have answered some (each line names its worker's pid), in
        # rounds of concurrent requests; bounded.
        for _ in range(10):
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda _: hit(served.base, "/healthz"), range(HITS)))
            assert {r.status_code for r in answers} == {200}
            hits += HITS
            if len(healthz_pids(served)) == 2:
                break
        assert len(healthz_pids(served)) == 2, "one worker answered every request"
        samples = scrape_sync(served.base)
        counted = samples.get(
            "cloudadmin_http_requests_total", method="GET", route="/healthz", status="200"
        )
        assert counted - start == hits
        assert (
            samples.get(
                "cloudadmin_http_request_duration_seconds_count",
                method="GET",
                route="/healthz",
                status="200",
            )
            - start
            == hits
        )
        # The pool size is each live worker's, added up.
        assert samples.get("cloudadmin_db_pool_size") == 2 * 10


def healthz_pids(served: Served) -> set[int]:
    """The workers that have logged a /healthz answer so far (lines are flushed as they
    are written; give the last ones a moment)."""
    deadline = time.monotonic() + 2
    while True:
        written = served.stderr.read_text()
        complete = written[: written.rfind("\n") + 1]  # not a line being written
        pids = {line["pid"] for line in access_lines(complete) if line["route"] == "/healthz"}
        if len(pids) == 2 or time.monotonic() > deadline:
            return pids
        time.sleep(0.1)


class TestJsonAccessLog:
    def test_one_json_line_per_request_with_the_rows_request_id(self, served: Served):
        answers = [hit(served.base, "/healthz") for _ in range(3)]
        # A parameter the log does not take: refused (docs/api.md), logged, and masked.
        logged = httpx.get(f"{served.base}{LOG}?password=hunter2", headers=RESELLER_KEY, timeout=30)
        assert logged.status_code == 400, logged.text
        refused = httpx.get(
            f"{served.base}{LOG}", headers={"Authorization": "apikey 2_bad"}, timeout=30
        )
        assert refused.status_code == 401
        stderr = served.stop()

        assert "\x1b" not in stderr
        assert "hunter2" not in stderr
        for line in stderr.splitlines():
            if line.startswith("database: "):  # printed by `serve` before logging starts
                continue
            record = json.loads(line)  # every other line is one JSON object
            assert record["logger"] != "uvicorn.access"
            assert "color_message" not in record
        # Two workers write to one stderr: lines are matched by request id, not order.
        ids = [r.headers["x-request-id"] for r in (*answers, logged, refused)]
        by_id: dict[str, list[dict[str, Any]]] = {}
        for line in access_lines(stderr):
            by_id.setdefault(line["request_id"], []).append(line)
        assert all(len(by_id.get(rid, [])) == 1 for rid in ids), "not one line per request"
        ok, bad = by_id[logged.headers["x-request-id"]][0], by_id[ids[-1]][0]
        with sqlite3.connect(served.database) as db:
            [(request_id, client_id, user_id, token_id)] = db.execute(
                "SELECT request_id, client_id, user_id, token_id FROM activity_log"
            ).fetchall()
        assert ok["request_id"] == request_id
        assert (ok["client_id"], ok["user_id"], ok["token_id"]) == (client_id, user_id, token_id)
        assert (ok["method"], ok["route"], ok["status"]) == ("GET", LOG, 400)
        assert ok["path"] == f"{LOG}?password=%2A%2A%2A"
        assert ok["duration_ms"] > 0
        assert (bad["status"], bad["route"], bad["token_id"]) == (401, LOG, None)
