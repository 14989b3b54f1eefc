"""operations.md, "Slow clients": a real `cloudadmin serve` closes a connection whose
request head (request line and headers) has not arrived within
CLOUDADMIN_REQUEST_HEAD_TIMEOUT_SECONDS: from the connection's start, and after each
response on a kept-alive connection. A head that arrived is left alone: its body is the
body timeout's business (408)."""

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

from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

HEAD_TIMEOUT = 1  # seconds, the setting under test
BODY_TIMEOUT = 3
# How long a test waits for the server to act: generous, the machine may be busy. The
# server must act long before (HEAD_TIMEOUT); without the bound it never does.
DEADLINE = 60

PARTIAL_HEADS = [
    b"",  # connected, nothing sent
    b"G",
    b"GET /healthz HTT",
    b"GET /healthz HTTP/1.1\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow",
    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # the blank line never comes
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """`cloudadmin serve` on its own embedded database, with short timeouts."""
    tmp_path: Path = tmp_path_factory.mktemp("head-timeout")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CLOUDADMIN_")}
    env.update(
        CLOUDADMIN_DATA_DIR=str(tmp_path / "data"),
        CLOUDADMIN_REQUEST_HEAD_TIMEOUT_SECONDS=str(HEAD_TIMEOUT),
        CLOUDADMIN_BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT),
        CLOUDADMIN_RUN_DISPATCHER="false",
    )
    port = free_port()
    with subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:  # its pipe closed at the end
        try:
            wait_until_healthy(f"http://127.0.0.1:{port}", proc)
            yield "127.0.0.1", port
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def connect(address: tuple[str, int], head: bytes) -> socket.socket:
    sock = socket.create_connection(address, timeout=DEADLINE)
    if head:
        sock.sendall(head)
    return sock


def read_until_closed(sock: socket.socket, deadline: float) -> bytes:
    """What the server sent until it closed the connection; fails when it has not closed
    it by ``deadline`` (a monotonic time)."""
    received = b""
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"still open after {DEADLINE} s; received {received!r}"
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            continue  # the assertion above reports it
        if not data:
            return received
        received += data


def read_response(sock: socket.socket) -> bytes:
    """One response (headers and a Content-Length body) of a kept-alive connection."""
    sock.settimeout(DEADLINE)
    received = b""
    while b"\r\n\r\n" not in received:
        data = sock.recv(65536)
        assert data, f"closed before a response; received {received!r}"
        received += data
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        data = sock.recv(65536)
        assert data, "closed in the middle of a response"
        body += data
    return head


class TestRequestHead:
    def test_connections_with_an_incomplete_head_are_closed(self, server: tuple[str, int]):
        socks = [connect(server, head) for head in PARTIAL_HEADS for _ in range(5)]
        deadline = time.monotonic() + DEADLINE
        try:
            for sock in socks:
                # Closed without an answer: there is no request to answer.
                assert read_until_closed(sock, deadline) == b""
        finally:
            for sock in socks:
                sock.close()
        # The server still serves.
        assert httpx.get(f"http://{server[0]}:{server[1]}/healthz", timeout=30).status_code == 200

    @pytest.mark.parametrize("head", [b"", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"])
    def test_a_kept_alive_connection_waits_for_its_next_head_as_long(
        self, server: tuple[str, int], head: bytes
    ):
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with connect(server, request) as sock:
            assert read_response(sock).startswith(b"HTTP/1.1 200")
            if head:
                sock.sendall(head)  # uvicorn's keep-alive timer stops at the first byte
            assert read_until_closed(sock, time.monotonic() + DEADLINE) == b""

    def test_a_head_that_arrived_is_answered_even_if_its_body_does_not(
        self, server: tuple[str, int]
    ):
        head = (
            b"POST /iam/admin/sellers HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 64\r\n\r\n{"
        )
        with connect(server, head) as sock:
            answer = read_until_closed(sock, time.monotonic() + DEADLINE)
        # The body timeout's answer, not the head timeout's silent close.
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]

    def test_complete_requests_are_served_on_one_connection(self, server: tuple[str, int]):
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with connect(server, request) as sock:
            for _ in range(3):
                assert read_response(sock).startswith(b"HTTP/1.1 200")
                sock.sendall(request)
            assert read_response(sock).startswith(b"HTTP/1.1 200")
