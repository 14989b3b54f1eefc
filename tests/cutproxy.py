"""A TCP proxy on loopback that a test can cut: a database that restarts (every
connection closed, new ones refused for a while) or that stops answering (connections
held open, nothing forwarded), without touching the shared server.

It runs on an event loop of its own, in a thread, so that neither a busy test loop nor
a blocking test slows the traffic it forwards."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

# Bytes read from one side before they are written to the other.
CHUNK = 65536


class CutProxy:
    """Forwards 127.0.0.1:``port`` to ``target``. ``cut()`` closes every connection
    and refuses new ones until ``restore()``; ``freeze()`` keeps them open but forwards
    nothing (new ones are accepted and left waiting) until ``restore()``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.cuts = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._frozen = asyncio.Event()  # of the proxy's loop
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._call(self._listen(0))

    @classmethod
    def before(cls, url: str) -> CutProxy:
        """A proxy in front of the server of a database URL."""
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by the proxy's."""
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")
        auth = f"{netloc[0]}@" if netloc[1] else ""
        return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{self.port}"))

    def _call(self, coro: object) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)  # type: ignore[arg-type]

    async def _listen(self, port: int) -> None:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accepted(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        pair = (client_w, server_w)
        self._pairs.add(pair)
        try:
            await asyncio.gather(self._pipe(client_r, server_w), self._pipe(server_r, client_w))
        finally:
            self._pairs.discard(pair)
            for writer in pair:
                writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(CHUNK):
                while self._frozen.is_set():  # hold it: a server that does not answer
                    await asyncio.sleep(0.05)
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _cut(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for client, server in list(self._pairs):
            for writer in (client, server):
                transport = writer.transport
                # A reset, as a server that went away mid-conversation leaves.
                with contextlib.suppress(Exception):
                    sock = transport.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                transport.abort()
        self._pairs.clear()

    def cut(self) -> None:
        """Every connection closed (reset), new ones refused: the server restarts."""
        self.cuts += 1
        self._call(self._cut())

    def freeze(self) -> None:
        """Connections stay open and new ones are accepted, but nothing is forwarded."""
        self._loop.call_soon_threadsafe(self._frozen.set)

    def restore(self) -> None:
        """Accepts and forwards again (on the same port)."""
        self._loop.call_soon_threadsafe(self._frozen.clear)
        if self._server is not None and not self._server.is_serving():
            self._call(self._listen(self.port))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._cut())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextmanager
def cut_proxy(url: str) -> Iterator[CutProxy]:
    """A proxy in front of the database of ``url``, closed at the end."""
    proxy = CutProxy.before(url)
    try:
        yield proxy
    finally:
        proxy.close()
