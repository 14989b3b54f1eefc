"""/docs and /redoc work with no network: every asset comes from the service itself.

The server and headless Chromium run together in a new network namespace (offline_docs.py),
where nothing but loopback exists, so a page that needed a CDN would render no operation.
Besides the rendered DOM, the test reads the served HTML (no URL of another host) and
Chromium's network log (every request the page made went to the server).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

HELPER = Path(__file__).with_name("offline_docs.py")
SRC = Path(__file__).resolve().parents[2] / "src"
URL = re.compile(r"""(?:https?:)?//[^\s"'<>()]+""")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
    pytest.skip(reason)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("/usr/bin/chromium")
    if found is None:
        _unavailable("Chromium is not installed (Debian package chromium)")
    return str(found)


def _namespace_command() -> list[str]:
    """A new network namespace (and a user namespace, so that no root is needed)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        _unavailable("unshare (util-linux) is not installed")
    command = [str(unshare), "--net", "--map-root-user"]
    probe = subprocess.run([*command, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        _unavailable(f"cannot create a network namespace: {probe.stderr.strip()}")
    return command


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    chromium = _chromium()
    out = tmp_path_factory.mktemp("offline-docs")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [*_namespace_command(), sys.executable, str(HELPER), str(out), "--chromium", chromium],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"offline run failed:\n{done.stdout}\n{done.stderr}"
    spec = json.loads((out / "openapi.json").read_text())
    return {
        "out": out,
        "origin": json.loads((out / "result.json").read_text())["origin"],
        "operation_ids": [
            op["operationId"] for item in spec["paths"].values() for op in item.values()
        ],
    }


def page_requests(netlog: Path) -> list[str]:
    """The URLs Chromium requested for the page: the page itself, and whatever the page
    asked for (those have the page's origin as initiator). Chromium's own requests, such
    as update checks, have no initiator and are not the page's doing."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    starts = [
        e["params"] for e in log["events"] if e["type"] == start and "url" in e.get("params", {})
    ]
    return [
        p["url"]
        for p in starts
        if p.get("request_type") == "main frame"
        or p.get("initiator", "not an origin") != "not an origin"
    ]


@pytest.mark.parametrize("page", ["docs", "redoc"])
class TestOffline:
    def test_every_operation_is_rendered(self, rendered: dict[str, Any], page: str):
        dom = (rendered["out"] / f"{page}.dom.html").read_text()
        assert "list_addendums" in dom and "List addendums" in dom
        missing = [op for op in rendered["operation_ids"] if op not in dom]
        assert not missing, f"{page}: operations not rendered: {missing}"

    def test_the_html_names_no_other_host(self, rendered: dict[str, Any], page: str):
        html = (rendered["out"] / f"{page}.html").read_text()
        foreign = [u for u in URL.findall(html) if not u.startswith(rendered["origin"] + "/")]
        assert not foreign, f"{page} names other hosts: {foreign}"
        assert "fonts.googleapis" not in html and "cdn." not in html

    def test_the_page_fetched_only_from_the_server(self, rendered: dict[str, Any], page: str):
        urls = page_requests(rendered["out"] / f"{page}.netlog.json")
        origin = rendered["origin"]
        assert f"{origin}/openapi.json" in urls and f"{origin}/docs-assets/favicon.svg" in urls
        assert all(u.startswith(origin + "/") for u in urls), urls

    def test_the_policy_blocked_nothing_the_page_needs(self, rendered: dict[str, Any], page: str):
        # The one block expected: ReDoc's footer logo, which it loads from its maker's CDN
        # (and hides when the load fails).
        console = (rendered["out"] / f"{page}.console.txt").read_text().splitlines()
        blocked = [
            line
            for line in console
            if "Content Security Policy" in line
            and "https://cdn.redoc.ly/redoc/logo-mini.svg" not in line
        ]
        assert not blocked, blocked


class TestAssets:
    """The pages' links resolve to assets of the installed packages (no browser needed)."""

    async def test_pages_link_local_assets(self, client: httpx.AsyncClient):
        for page, assets in {
            "/docs": ["swagger-ui-bundle.js", "swagger-ui.css", "favicon.svg"],
            "/redoc": ["redoc.standalone.js", "favicon.svg"],
        }.items():
            html = (await client.get(page)).text
            for name in assets:
                assert f'"/docs-assets/{name}"' in html, (page, name)
                r = await client.get(f"/docs-assets/{name}")
                assert r.status_code == 200 and len(r.content) > 100, (page, name)

    async def test_pages_may_fetch_only_from_the_service(self, client: httpx.AsyncClient):
        for page in ("/docs", "/redoc"):
            policy = (await client.get(page)).headers["content-security-policy"]
            directives = dict(d.split(" ", 1) for d in policy.split("; "))
            assert directives["default-src"] == "'self'"
            assert directives["connect-src"] == "'self'"
            assert directives["img-src"] == "'self' data:"
            assert "unsafe-inline" not in directives["script-src"]
            assert "http" not in policy

    async def test_pages_are_not_operations(self, client: httpx.AsyncClient):
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert not {"/docs", "/redoc"} & set(paths)
        assert not any(p.startswith("/docs-assets") for p in paths)
