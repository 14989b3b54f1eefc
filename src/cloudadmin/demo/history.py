"""A little history for a newly seeded demo, made through the served API itself.

A fresh demo's activity log was empty, so the first request the README suggests (the
reseller's activity log) answered an empty list. The log is written by the request
path (ApiRoute), not by the load format, so the demo makes a few ordinary requests of
its own once the server answers, with the keys it printed: the rows are exactly what
those requests leave, nothing written by hand. It runs only when the demo seeds (the
first start, or --reset): a kept landscape keeps its history.

It runs in a daemon thread of the `serve` process, beside the server it waits for; a
failure is one warning line, never the server's end.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import httpx

log = logging.getLogger("cloudadmin.demo")

# A start takes seconds; a server that has not answered by then is not coming.
WAIT_SECONDS = 120.0
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class CloudExample:
    """A listener of the demo to read: where it is and what it is called."""

    client_id: int
    project_id: int
    region_id: int
    listener_id: str
    name: str

    @property
    def path(self) -> str:
        return f"/cloud/v1/lblisteners/{self.project_id}/{self.region_id}/{self.listener_id}"


def requests(example: CloudExample | None) -> list[tuple[str, str]]:
    """(kind of caller, path) of each request, all reads: the history changes nothing
    that the landscape says."""
    made = [
        ("operator", "/iam/clients"),
        ("reseller", "/iam/clients"),
        ("reseller", "/iam/admin/sellers"),
        ("reseller", "/iam/reselling/settings"),
        ("client_admin", "/iam/clients/me"),
        ("client_member", "/iam/users"),
    ]
    if example is not None:
        listeners = f"/cloud/v1/lblisteners/{example.project_id}/{example.region_id}"
        made += [("client_admin", listeners), ("client_admin", example.path)]
    return made


def local_base(host: str, port: int) -> str:
    """Where this machine reaches a server listening on ``host`` (a wildcard address is
    reached on loopback)."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def make_history(base: str, keys: dict[str, str], example: CloudExample | None) -> int:
    """Waits until the server at ``base`` answers, then sends the requests; returns how
    many were answered below 500."""
    deadline = time.monotonic() + WAIT_SECONDS
    with httpx.Client(base_url=base, timeout=10) as http:
        while True:
            try:
                if http.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                log.warning("demo: no history made: the server at %s did not answer", base)
                return 0
            time.sleep(POLL_SECONDS)
        answered = 0
        for kind, path in requests(example):
            token = keys.get(kind)
            if token is None:
                continue
            r = http.get(path, headers={"Authorization": f"apikey {token}"})
            answered += r.status_code < 500
        return answered


def start_history(
    host: str, port: int, keys: dict[str, str], example: CloudExample | None
) -> threading.Thread:
    def run() -> None:
        try:
            make_history(local_base(host, port), keys, example)
        except Exception as exc:  # a demo nicety: never the server's end
            log.warning("demo: no history made: %s", exc)

    thread = threading.Thread(target=run, name="demo-history", daemon=True)
    thread.start()
    return thread
