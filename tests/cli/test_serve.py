"""A real `cloudadmin serve` process answers over HTTP on loopback after `cloudadmin load`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cleaning import empty_all_tables
from tests.importer.documents import EXAMPLE
from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

# The example load document (docs/import.md).
DOCUMENT = EXAMPLE


PRICES = {
    "region_id": 76,
    "currency_code": "EUR",
    "flavors": {"g1-standard-2-4": 0.05},
    "volume_types": {"standard": 0.0001},
    "public_ipv4_per_hour": 0.004,
}


def cli(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CLOUDADMIN_DATABASE_URL": database_url,
        "CLOUDADMIN_SECRET_KEY": "serve-test-secret",
        "CLOUDADMIN_DATA_DIR": str(tmp_path / "data"),
    }


@pytest.fixture
def env(database_url: str, tmp_path: Path, app: object) -> dict[str, str]:
    """The test database, emptied (the `app` fixture empties it)."""
    return environment(database_url, tmp_path)


@pytest.fixture(scope="class")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server per database for the class (its tests do not undo each other's
    changes, and run in their order), on the test database emptied and loaded."""
    asyncio.run(empty_all_tables(database_url))
    tmp_path = tmp_path_factory.mktemp("serve")
    env = environment(database_url, tmp_path)
    doc = tmp_path / "landscape.json"
    doc.write_text(json.dumps(DOCUMENT))
    loaded = cli("load", str(doc), env=env)
    assert loaded.returncode == 0, loaded.stderr
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": [PRICES]}))
    env = {**env, "CLOUDADMIN_PRICES_FILE": str(prices)}
    port = free_port()
    with subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:  # its pipe closed at the end
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, proc)
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=20)


class TestServeAfterLoad:
    def test_answers_authenticated_requests(self, server: str):
        r = httpx.post(
            f"{server}/iam/admin/sellers",
            json={"email": "first@sales.example", "full_name": "First"},
            headers={"Authorization": "APIKey 2_reseller-secret"},
        )
        assert r.status_code == 200, r.text
        seller = r.json()
        assert seller["reseller_name"] == "Acme Hosting"
        assert seller["id"] > 0
        log = httpx.get(
            f"{server}/iam/activity_log/requests",
            headers={"Authorization": "apikey 2_reseller-secret"},
        ).json()
        assert log["count"] == 1 and log["result"][0]["token"] == 2
        assert log["result"][0]["remote_ip_address"] == "127.0.0.1"

    def test_prices_file_is_loaded_at_start(self, server: str):
        r = httpx.post(
            f"{server}/cloud/v2/pricing/11/76/k8s/clusters",
            json={
                "pools": [
                    {
                        "flavor_id": "g1-standard-2-4",
                        "node_count": 2,
                        "boot_volume_size": 10,
                        "boot_volume_type": "standard",
                    }
                ]
            },
            headers={"Authorization": "apikey 3_client-secret"},
        )
        assert r.status_code == 200, r.text
        total = r.json()["total_price"]
        assert total["price_status"] == "show" and total["currency_code"] == "EUR"
        assert total["price_per_hour"] == pytest.approx(0.102)

    def test_refuses_unknown_key_and_is_ready(self, server: str):
        r = httpx.get(
            f"{server}/iam/activity_log/requests", headers={"Authorization": "apikey 3_wrong"}
        )
        assert r.status_code == 401
        assert httpx.get(f"{server}/readyz").json() == {"status": "ready"}


class TestApiKeyCreate:
    def test_prints_a_working_key_once(self, env: dict[str, str], tmp_path: Path):
        doc = tmp_path / "landscape.json"
        doc.write_text(json.dumps(DOCUMENT))
        assert cli("load", "-", env=env, stdin=doc.read_text()).returncode == 0
        made = cli("apikey", "create", "--user", "20", "--name", "ci", env=env)
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip()
        key_id, _, secret = token.partition("_")
        assert int(key_id) > 3 and len(secret) >= 32  # sequence continued above imports

    def test_unknown_user(self, env: dict[str, str]):
        made = cli("apikey", "create", "--user", "999", env=env)
        assert made.returncode == 1
        assert "no user with id 999" in made.stderr
