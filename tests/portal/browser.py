"""Headless Chromium driven over the Chrome DevTools Protocol, for the portal's browser
tests: open a page, fill and submit a form, read what it shows, take a screenshot.

Only the standard library and `websockets` (a dependency of the service's server). The
task named Selenium with chromedriver; neither is in requirements-dev.lock, and the
protocol is what chromedriver itself speaks to Chromium.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = "chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1200,800",
    "--remote-debugging-port=0",
]
TIMEOUT = 30.0


def chromium_path() -> str | None:
    return shutil.which(CHROMIUM)


class Page:
    """One tab. Events that arrive while a command waits for its answer are kept."""

    def __init__(self, ws_url: str) -> None:
        self._stack = ExitStack()
        self._ws: ClientConnection = self._stack.enter_context(
            connect(ws_url, max_size=None, open_timeout=TIMEOUT)
        )
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Log.enable")
        self.call("Runtime.enable")

    def _receive(self, deadline: float) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("Chromium did not answer in time")
        message: dict[str, Any] = json.loads(self._ws.recv(timeout=left))
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._receive(deadline)
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def _wait_for_load(self) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive(deadline))

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self._wait_for_load()

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"].get("value")

    def fill_and_submit(self, fields: dict[str, str]) -> None:
        """Types the values into the inputs with these ids, then clicks the form's
        button, as a person would; waits for the page the answer shows."""
        sets = "".join(
            f"document.getElementById({json.dumps(k)}).value = {json.dumps(v)};"
            for k, v in fields.items()
        )
        self.events.clear()
        self.evaluate(f"{sets} document.querySelector('main form button').click(); true")
        self._wait_for_load()

    def click(self, selector: str) -> None:
        self.events.clear()
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click(); true")
        self._wait_for_load()

    def text(self) -> str:
        return str(self.evaluate("document.body.innerText"))

    def console_problems(self) -> list[str]:
        """What Chromium logged as errors for the page's resources (a CSP violation, a
        missing file); the page's own status (a 401 sign-in page) is not one."""
        here = self.evaluate("location.href")
        entries = [e["params"]["entry"] for e in self.events if e.get("method") == "Log.entryAdded"]
        return [
            f"{entry['text']} {entry.get('url', '')}"
            for entry in entries
            if entry["level"] == "error" and entry.get("url") != here
        ]

    def forget_cookies(self) -> None:
        self.call("Network.clearBrowserCookies")

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self._stack.close()


class Browser:
    def __init__(self, executable: str, profile: Path) -> None:
        self._proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"Chromium did not start (exit {self._proc.poll()})")
            time.sleep(0.05)
        self.port = int(port_file.read_text().splitlines()[0])

    def new_page(self) -> Page:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT"
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            target = json.load(answer)
        return Page(target["webSocketDebuggerUrl"])

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
