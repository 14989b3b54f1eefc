"""What observing a request costs: the metrics and access-log middleware
(cloudadmin/observability/request_observer.py) around a trivial ASGI app, per request,
with prometheus-client's values in process memory and in multiprocess files (as under
`cloudadmin serve`), with the access line off (level WARNING) and on (formatted as
JSON, written to a null device).

    python bench/observability.py [--requests 20000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

CHILD = "--child"


class _Route:
    path = "/iam/users/{userId}"


async def _inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
    scope["route"] = _Route
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _measure(requests: int, label: str, sink: Any) -> None:
    from cloudadmin.logs import JsonFormatter
    from cloudadmin.observability.request_observer import ObserveMiddleware

    access = logging.getLogger("cloudadmin.access")
    access.propagate = False
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonFormatter())
    access.addHandler(handler)

    async def send(message: Any) -> None:
        pass

    async def receive() -> Any:
        return {}

    observed = ObserveMiddleware(_inner)  # type: ignore[arg-type]
    for name, app, level in (
        ("bare app", _inner, logging.WARNING),
        ("metrics", observed, logging.WARNING),
        ("metrics + JSON access line", observed, logging.INFO),
    ):
        access.setLevel(level)
        started = time.perf_counter()
        for i in range(requests):
            scope = {
                "type": "http",
                "method": "GET",
                "path": f"/iam/users/{i}",
                "query_string": b"",
                "client": ("203.0.113.7", 1),
                "state": {"request_id": "r"},
            }
            await app(scope, receive, send)  # type: ignore[operator]
        per = (time.perf_counter() - started) / requests * 1e6
        print(f"{label:<13} {name:<28} {per:7.1f} us/request")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--smoke", action="store_true", help="200 requests, for CI")
    parser.add_argument(CHILD, choices=["memory", "multiprocess"])
    args = parser.parse_args()
    requests = 200 if args.smoke else args.requests
    if args.child:
        with open(os.devnull, "w") as sink:
            asyncio.run(_measure(requests, args.child, sink))
        return
    # prometheus-client picks where values live when first imported: one process each.
    for mode in ("memory", "multiprocess"):
        env = dict(os.environ)
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with tempfile.TemporaryDirectory() as directory:
            if mode == "multiprocess":
                env["PROMETHEUS_MULTIPROC_DIR"] = directory
            subprocess.run(
                [sys.executable, __file__, "--requests", str(requests), CHILD, mode],
                env=env,
                check=True,
            )


if __name__ == "__main__":
    main()
