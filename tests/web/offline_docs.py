"""Serves the API and renders /docs and /redoc in headless Chromium, with no network but
loopback. Run inside a new network namespace (tests/web/test_docs_offline.py does it):

    unshare --net --map-root-user python tests/web/offline_docs.py OUTDIR [--screenshots]

It brings the namespace's loopback up, starts `cloudadmin serve` on an embedded SQLite
database, and writes into OUTDIR for each page: the HTML as served (<page>.html), the DOM
Chromium rendered from it (<page>.dom.html), Chromium's network log (<page>.netlog.json)
and, with --screenshots, a picture (<page>.png); plus openapi.json and result.json (the
server's origin). Only the standard library and httpx: it runs with the service's Python.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

PORT = 8000  # the namespace is new: nothing else listens in it
ORIGIN = f"http://127.0.0.1:{PORT}"
PAGES = {"docs": "/docs", "redoc": "/redoc"}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-features=AutofillServerCommunication",
    "--enable-logging=stderr",
    "--hide-scrollbars",
    "--window-size=1280,1000",
    # Virtual time runs ahead while the page is idle and waits while it loads: the budget is
    # how much page time the scripts get to fetch /openapi.json and render, not wall time.
    "--virtual-time-budget=20000",
]
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """`ip link set lo up` without needing iproute2: a new namespace's loopback is down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def start_server(data_dir: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_")}
    env |= {
        "CLOUDADMIN_DATA_DIR": str(data_dir),
        "CLOUDADMIN_SECRET_KEY": "offline-docs",
        "CLOUDADMIN_RUN_DISPATCHER": "false",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--host", "127.0.0.1", "--port", str(PORT)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_until_healthy(proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{ORIGIN}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = proc.stdout.read() if proc.stdout else ""
            sys.exit(f"the server did not answer /healthz within 90 s:\n{out}")
        time.sleep(0.05)


def chromium(chromium_path: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium_path, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def render(chromium_path: str, out: Path, name: str, path: str, screenshot: bool) -> None:
    url = ORIGIN + path
    (out / f"{name}.html").write_text(httpx.get(url, timeout=10).text)
    netlog = out / f"{name}.netlog.json"
    done = chromium(
        chromium_path, out / f"profile-{name}", f"--log-net-log={netlog}", "--dump-dom", url
    )
    if done.returncode != 0:
        sys.exit(f"chromium failed on {url} ({done.returncode}):\n{done.stderr[-4000:]}")
    (out / f"{name}.dom.html").write_text(done.stdout)
    (out / f"{name}.console.txt").write_text(done.stderr)
    if screenshot:
        shot = chromium(
            chromium_path, out / f"profile-{name}-shot", f"--screenshot={out / f'{name}.png'}", url
        )
        if shot.returncode != 0:
            sys.exit(f"chromium screenshot of {url} failed:\n{shot.stderr[-4000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--screenshots", action="store_true")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    loopback_up()
    proc = start_server(out / "data")
    try:
        wait_until_healthy(proc)
        (out / "openapi.json").write_text(httpx.get(f"{ORIGIN}/openapi.json", timeout=10).text)
        # Each page in a Chromium of its own, at the same time: most of a launch waits.
        with ThreadPoolExecutor(len(PAGES)) as pool:
            renders = [
                pool.submit(render, args.chromium, out, name, path, args.screenshots)
                for name, path in PAGES.items()
            ]
            for done in renders:
                done.result()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    (out / "result.json").write_text(json.dumps({"origin": ORIGIN}))


if __name__ == "__main__":
    main()
