"""A loopback server that never stops talking: it stands for a webhook receiver, mail
server or broker that answers with an endless body, greeting or frame. It counts the
bytes it managed to send, which is what the client read or holds in its socket's
buffers: the measure of a bounded read (time is not)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# What it sends at most, per connection: a client that reads without a bound stops at
# this (and holds it in memory) instead of eating the machine's.
CAP = 64 * 1024 * 1024
# Its own send buffer is kept small, so the bytes in flight are mostly the client's.
SEND_BUFFER = 64 * 1024


class Flood:
    """Accepts connections; on each, sends ``greeting``, waits for ``ask`` bytes of the
    client's (0: none), then sends ``prefix`` and ``chunk`` again and again until the
    client closes the connection or ``CAP`` is sent, then holds it open, silent."""

    def __init__(self, prefix: bytes, chunk: bytes, *, greeting: bytes = b"", ask: int = 0) -> None:
        self.prefix, self.chunk, self.greeting, self.ask = prefix, chunk, greeting, ask
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.sent: list[int] = []  # per connection, bytes sent so far
        self.ended: list[bool] = []  # per connection: the client closed it
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            self._held.append(conn)
            self.sent.append(0)
            self.ended.append(False)
            thread = threading.Thread(
                target=self._talk, args=(conn, len(self.sent) - 1), daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _talk(self, conn: socket.socket, n: int) -> None:
        try:
            conn.sendall(self.greeting)
            got = 0
            while got < self.ask:
                data = conn.recv(65536)
                if not data:
                    self.ended[n] = True
                    return
                got += len(data)
            out = memoryview(self.prefix + self.chunk)
            chunk = memoryview(self.chunk)
            while self.sent[n] < CAP and not self._stop.is_set():
                done = conn.send(out)
                self.sent[n] += done
                out = out[done:] if done < len(out) else chunk
        except OSError:  # the client closed it: what a bounded reader does
            self.ended[n] = not self._stop.is_set()

    @property
    def total(self) -> int:
        return sum(self.sent)

    def settled(self, connections: int) -> bool:
        """``connections`` were made and each is over: the client closed it, or it took
        all the server had."""
        return len(self.sent) >= connections and all(
            ended or sent >= CAP for ended, sent in zip(self.ended, self.sent, strict=True)
        )

    def close(self) -> None:
        self._stop.set()
        for conn in self._held:
            conn.close()
        self.sock.close()
        for thread in self._threads:
            thread.join(5)


@contextmanager
def flood(prefix: bytes, chunk: bytes, *, greeting: bytes = b"", ask: int = 0) -> Iterator[Flood]:
    server = Flood(prefix, chunk, greeting=greeting, ask=ask)
    try:
        yield server
    finally:
        server.close()


class ReturningBroker(Flood):
    """Speaks AMQP 0-9-1 up to the first message published (handshake, channel,
    publisher confirms; pamqp marshals the frames), then returns it as unroutable with a
    content header that claims ``size`` bytes, and sends body frames of 128 KiB until
    the client closes the connection or ``CAP`` is sent."""

    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(b"", b"")

    def _talk(self, conn: socket.socket, n: int) -> None:
        from pamqp import commands, frame, header
        from pamqp.body import ContentBody

        def send(channel: int, *frames: Any) -> None:
            for f in frames:
                data = frame.marshal(f, channel)
                conn.sendall(data)
                self.sent[n] += len(data)

        buffer = b""

        def receive() -> tuple[int, Any]:
            nonlocal buffer
            while True:
                if buffer.startswith(b"AMQP") and len(buffer) >= 8:
                    buffer = buffer[8:]
                    return 0, "protocol header"
                try:
                    used, channel, received = frame.unmarshal(buffer)
                except Exception:  # not all there yet
                    data = conn.recv(65536)
                    if not data:
                        raise ConnectionError("closed") from None
                    buffer += data
                    continue
                buffer = buffer[used:]
                return channel, received

        try:
            receive()  # the protocol header
            capabilities = {"publisher_confirms": True, "basic.nack": True}
            send(
                0,
                commands.Connection.Start(
                    server_properties={"capabilities": capabilities}, mechanisms="PLAIN"
                ),
            )
            receive()  # StartOk
            send(0, commands.Connection.Tune(channel_max=16, frame_max=131072, heartbeat=0))
            receive()  # TuneOk
            receive()  # Open
            send(0, commands.Connection.OpenOk())
            while True:
                channel, received = receive()
                if isinstance(received, commands.Channel.Open):
                    send(channel, commands.Channel.OpenOk())
                elif isinstance(received, commands.Confirm.Select):
                    send(channel, commands.Confirm.SelectOk())
                elif isinstance(received, header.ContentHeader):
                    props = received.properties
                    break
            send(
                channel,
                commands.Basic.Return(reply_code=312, reply_text="NO_ROUTE", routing_key="q"),
                header.ContentHeader(0, self.size, props),
            )
            body = ContentBody(b"\0" * (131072 - 8))
            while self.sent[n] < CAP and not self._stop.is_set():
                send(channel, body)
        except OSError:  # the client closed it: what a bounded reader does
            self.ended[n] = not self._stop.is_set()
