"""Schemathesis against a real `cloudadmin serve --demo`: generated requests for every
operation never get a 5xx, and documented responses match their schemas."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    data = tmp_path_factory.mktemp("fuzz")
    port = _free_port()
    env = {**os.environ, "CLOUDADMIN_DATA_DIR": str(data), "CLOUDADMIN_LOG_LEVEL": "WARNING"}
    env.pop("CLOUDADMIN_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--demo", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=(data / "server.log").open("w"), text=True,
    )
    keys: dict[str, str] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("try:"):
            break
        parts = line.split()
        if len(parts) == 2 and "_" in parts[1]:
            keys[parts[0]] = parts[1]
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, \
            (data / "server.log").read_text()
        time.sleep(0.2)
    yield base, keys
    proc.terminate()
    proc.wait(timeout=20)
    log = Path(data / "server.log").read_text()
    assert "Traceback" not in log, log


def test_no_server_errors_and_documented_shapes(
    live_demo: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    base, keys = live_demo
    done = subprocess.run(
        [str(Path(sys.executable).parent / "schemathesis"), "run", f"{base}/openapi.json",
         "--checks", "not_a_server_error,response_schema_conformance",
         "--max-examples", "15", "--seed", "1", "--workers", "1",
         "--header", f"Authorization: apikey {keys['reseller']}",
         "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
