"""Loopback sockets that stand for a broker or mail server which is not one."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.waiting import until


class SilentListener:
    """Listens and accepts, counting the connections, and never says a word: to a
    client, a port that is open (or filtered) but never answers."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.peers: list[object] = []  # the accepted connections' far ends, in order
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.peers.append(peer)
            self.accepted += 1
            self._held.append(conn)

    async def accepted_before_a_probe(self) -> int:
        """Connects once itself and waits until that connection is accepted: one made
        before it (queued by the kernel in order) has been accepted by then. Returns how
        many were, without the probe."""
        host, port = self.sock.getsockname()[:2]
        _reader, writer = await asyncio.open_connection(host, port)
        try:
            probe = writer.get_extra_info("sockname")
            await until(lambda: probe in self.peers, "the probe's connection to be accepted")
            return self.peers.index(probe)
        finally:
            writer.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._held:
            conn.close()
        self.sock.close()


@contextmanager
def silent_listener(host: str = "127.0.0.1") -> Iterator[SilentListener]:
    listener = SilentListener(host)
    try:
        yield listener
    finally:
        listener.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
