"""A real HTTP server on loopback that stands for a subscriber's webhook receiver."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.waiting import until


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Receiver:
    """Records every request it is sent and answers each with the next status of
    ``answers`` (200 once they run out). ``start``/``stop`` bring it up and down on the
    same port, to stand for a receiver that is down for a while."""

    port: int = 0
    answers: list[int] = field(default_factory=list)
    location: str | None = None  # sent with 3xx answers
    tls: tuple[str, str] | None = None  # certificate and key files: serve HTTPS
    received: list[Received] = field(default_factory=list)
    accepted: list[Received] = field(default_factory=list)
    _server: uvicorn.Server | None = None
    _task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        if not self.port:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}/hooks/user-actions"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        got = Received(
            method=scope["method"],
            path=scope["path"],
            headers={k.decode().lower(): v.decode() for k, v in scope["headers"]},
            body=json.loads(raw) if raw else {},
        )
        self.received.append(got)
        status = self.answers.pop(0) if self.answers else 200
        if 200 <= status < 300:
            self.accepted.append(got)
        headers = [(b"content-length", b"0")]
        if self.location and 300 <= status < 400:
            headers.append((b"location", self.location.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def start(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        tls = {"ssl_certfile": self.tls[0], "ssl_keyfile": self.tls[1]} if self.tls else {}
        config = uvicorn.Config(
            self, log_level="warning", lifespan="off", timeout_keep_alive=1, **tls
        )  # type: ignore[arg-type]
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        await until(
            lambda: self._server is not None and self._server.started, "the receiver to start"
        )

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self._task, 10)
        self._server, self._task = None, None


def self_signed(directory: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 that nobody trusts, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "receiver.crt", directory / "receiver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)
