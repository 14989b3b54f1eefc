"""A real `cloudadmin` process checks its settings and its database before it works on
it: a problem is one line on stderr and a non-zero exit, never a traceback; serve,
worker and migrate wait for a database that is not up yet; serve gives requests in
flight a grace period after SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.startup import describe_url
from tests.databases import create_pg_database, drop_pg_database, postgres_base_url
from tests.servers import free_port, wait_until_healthy

pytestmark = pytest.mark.slow

PASSWORD = "hunter2-not-shown"


def base_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """The environment less any CLOUDADMIN_ setting of the caller's, plus ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_")}
    env["CLOUDADMIN_DATA_DIR"] = str(tmp_path / "data")
    env["CLOUDADMIN_SECRET_KEY"] = "startup-test-secret"
    env["CLOUDADMIN_RUN_DISPATCHER"] = "false"
    env.update({f"CLOUDADMIN_{name.upper()}": value for name, value in settings.items()})
    return env


def cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cloudadmin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{result.stderr}"
    line = lines[0]
    assert line.startswith("error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} missing from {line!r}"
    return line


@pytest.fixture
def pg_base() -> str:
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL is not reachable (set CLOUDADMIN_TEST_POSTGRES_URL)")
    return base


@pytest.fixture
def pg_fresh(pg_base: str) -> Iterator[str]:
    """A database of its own, empty (no schema)."""
    url = asyncio.run(create_pg_database(pg_base))
    try:
        yield url
    finally:
        asyncio.run(drop_pg_database(pg_base, url))


def pg_with(base: str, **parts: object) -> str:
    """``base`` with some parts replaced (user, database, port, ...), as a plain
    postgresql:// URL as people write it."""
    url = make_url(base).set(drivername="postgresql", **parts)  # type: ignore[arg-type]
    return url.render_as_string(hide_password=False)


def password_of(base: str) -> str:
    """The password the test server wants, or one it ignores (trust authentication):
    either way a password that must not be printed."""
    return make_url(base).password or PASSWORD


def table_exists(url: str, name: str) -> bool:
    import asyncpg

    async def check() -> bool:
        conn = await asyncpg.connect(
            make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        )
        try:
            return await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", name)
        finally:
            await conn.close()

    return asyncio.run(check())


# Each command that works on the database, with the arguments it needs.
COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "serve": lambda _tmp: ["serve", "--port", str(free_port())],
    "migrate": lambda _tmp: ["migrate"],
    "load": lambda tmp: ["load", str(tmp / "landscape.json")],
    "worker": lambda _tmp: ["worker"],
    "apikey create": lambda _tmp: ["apikey", "create", "--user", "1"],
    "events status": lambda _tmp: ["events", "status"],
}


@pytest.fixture
def landscape(tmp_path: Path) -> Path:
    path = tmp_path / "landscape.json"
    path.write_text("{}")
    return path


class TestBadDatabaseUrl:
    """One line on stderr, exit status 1, with a database that will never do (no
    waiting: CLOUDADMIN_DATABASE_WAIT_SECONDS=0 for the unreachable server)."""

    def run(
        self, tmp_path: Path, url: str, command: str = "migrate", **settings: str
    ) -> subprocess.CompletedProcess:
        env = base_env(tmp_path, database_url=url, database_wait_seconds="0", **settings)
        return cli(*COMMANDS[command](tmp_path), env=env)

    @pytest.mark.parametrize("command", COMMANDS)
    def test_unreachable_server(self, tmp_path: Path, landscape: Path, command: str):
        url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/test"
        result = self.run(tmp_path, url, command)
        line = assert_one_line_error(
            result, "cannot connect to the database", "postgresql+asyncpg://postgres:***@127.0.0.1:"
        )
        assert PASSWORD not in line
        assert result.returncode == 1

    @pytest.mark.parametrize("command", COMMANDS)
    def test_unsupported_scheme(self, tmp_path: Path, landscape: Path, command: str):
        result = self.run(tmp_path, f"mysql://root:{PASSWORD}@127.0.0.1/db", command)
        line = assert_one_line_error(
            result, "unsupported database or driver 'mysql'", "mysql://root:***@127.0.0.1/db"
        )
        assert PASSWORD not in line

    def test_driver_not_installed(self, tmp_path: Path):
        # Only the plain forms are mapped to asyncpg; a driver named is taken at its word.
        result = self.run(tmp_path, "postgresql+psycopg2://postgres@127.0.0.1/test")
        assert_one_line_error(result, "unsupported database or driver 'postgresql+psycopg2'")

    @pytest.mark.parametrize(
        "url",
        [
            "not a url",
            f"postgresql://postgres:{PASSWORD}@127.0.0.1:port/test",
        ],
    )
    def test_malformed_url(self, tmp_path: Path, url: str):
        line = assert_one_line_error(self.run(tmp_path, url), "is not a database URL")
        assert PASSWORD not in line

    def test_unknown_database(self, tmp_path: Path, pg_base: str):
        name = f"cloudadmin_missing_{uuid.uuid4().hex[:8]}"
        result = self.run(tmp_path, pg_with(pg_base, database=name))
        assert_one_line_error(result, f'database "{name}" does not exist')

    def test_unknown_user(self, tmp_path: Path, pg_base: str):
        role = f"nobody_{uuid.uuid4().hex[:8]}"
        result = self.run(tmp_path, pg_with(pg_base, username=role))
        line = assert_one_line_error(result, "cannot connect to the database", f'"{role}"')
        # Under trust authentication PostgreSQL says so; under password authentication
        # it does not tell an unknown role from a wrong password.
        assert (
            f'role "{role}" does not exist' in line
            or f'password authentication failed for user "{role}"' in line
        ), line

    def test_sqlite_directory_cannot_be_created(self, tmp_path: Path):
        (tmp_path / "a-file").write_text("")
        result = self.run(tmp_path, f"sqlite:///{tmp_path}/a-file/cloudadmin.db")
        assert_one_line_error(result, "cannot create the directory", "a-file")

    def test_sqlite_file_cannot_be_opened(self, tmp_path: Path):
        # A directory where the database file should be (as root, permissions do not
        # stop this process: an unwritable directory is not a test it could fail).
        (tmp_path / "db").mkdir()
        result = self.run(tmp_path, f"sqlite:///{tmp_path}/db")
        assert_one_line_error(result, "unable to open database file")

    def test_invalid_setting(self, tmp_path: Path):
        result = self.run(tmp_path, f"sqlite:///{tmp_path}/x.db", shutdown_grace_seconds="soon")
        assert_one_line_error(result, "CLOUDADMIN_SHUTDOWN_GRACE_SECONDS")


class TestMissingSecretKey:
    """With CLOUDADMIN_DATABASE_URL set, no command runs without CLOUDADMIN_SECRET_KEY,
    and the database is left as it was: nothing migrated."""

    @pytest.mark.parametrize("command", ["migrate", "serve"])
    def test_postgresql_left_untouched(self, tmp_path: Path, pg_fresh: str, command: str):
        env = base_env(tmp_path, database_url=pg_fresh)
        del env["CLOUDADMIN_SECRET_KEY"]
        result = cli(*COMMANDS[command](tmp_path), env=env)
        assert_one_line_error(result, "CLOUDADMIN_SECRET_KEY must be set")
        assert not table_exists(pg_fresh, "alembic_version")

    def test_sqlite_file_not_created(self, tmp_path: Path):
        path = tmp_path / "cloudadmin.db"
        env = base_env(tmp_path, database_url=f"sqlite:///{path}")
        del env["CLOUDADMIN_SECRET_KEY"]
        assert_one_line_error(cli("migrate", env=env), "CLOUDADMIN_SECRET_KEY must be set")
        assert not path.exists()


class TestPlainUrlForms:
    """postgresql://, postgres:// and sqlite:// are run on the async drivers."""

    @pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
    def test_postgresql(self, tmp_path: Path, pg_fresh: str, scheme: str):
        password = password_of(pg_fresh)
        url = pg_with(pg_fresh, password=password).replace("postgresql://", f"{scheme}://")
        result = cli("migrate", env=base_env(tmp_path, database_url=url))
        assert result.returncode == 0, result.stderr
        assert "schema up to date: postgresql+asyncpg://" in result.stdout
        assert f":{password}@" not in result.stdout + result.stderr
        assert ":***@" in result.stdout
        assert table_exists(pg_fresh, "alembic_version")

    def test_sqlite(self, tmp_path: Path):
        path = tmp_path / "plain.db"
        result = cli("migrate", env=base_env(tmp_path, database_url=f"sqlite:///{path}"))
        assert result.returncode == 0, result.stderr
        assert f"schema up to date: sqlite+aiosqlite:///{path}" in result.stdout

    @pytest.mark.parametrize(
        ("given", "used"),
        [
            ("postgresql://u:p@db:5432/x", "postgresql+asyncpg://u:p@db:5432/x"),
            ("postgres://u@db/x", "postgresql+asyncpg://u@db/x"),
            ("POSTGRES://u@db/x", "postgresql+asyncpg://u@db/x"),
            ("sqlite:///a/b.db", "sqlite+aiosqlite:///a/b.db"),
            ("postgresql+asyncpg://u@db/x", "postgresql+asyncpg://u@db/x"),
            ("postgresql+psycopg2://u@db/x", "postgresql+psycopg2://u@db/x"),
        ],
    )
    def test_settings_and_engine_see_the_async_form(self, given: str, used: str):
        settings = Settings(database_url=given)
        assert settings.effective_database_url == used
        if "psycopg2" not in used:
            # An explicit URL (migrations, tests) is mapped the same way.
            engine = create_engine(Settings(), given)
            assert engine.url.render_as_string(hide_password=False) == used

    def test_empty_url_is_the_embedded_default(self, tmp_path: Path):
        settings = Settings(database_url="", data_dir=tmp_path)
        assert settings.uses_embedded_default
        assert settings.effective_database_url == f"sqlite+aiosqlite:///{tmp_path}/cloudadmin.db"


class Lines:
    """The lines a process writes to a pipe, collected by a thread as they come."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        with stream:  # type: ignore[attr-defined]  # the pipe is closed once it ends
            for line in stream:  # type: ignore[attr-defined]
                self._new.put(line.rstrip("\n"))
        self._new.put(None)

    def wait_for(self, predicate: Callable[[str], bool], seconds: float, what: str) -> str:
        deadline = time.monotonic() + seconds
        for line in self.lines:
            if predicate(line):
                return line
        while True:
            try:
                line = self._new.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            if line is None:  # the deadline passed, or the stream ended
                pytest.fail(f"no line {what} within {seconds} s; got:\n" + "\n".join(self.lines))
            self.lines.append(line)
            if predicate(line):
                return line

    def rest(self) -> list[str]:
        self._thread.join(timeout=30)
        while True:
            try:
                line = self._new.get_nowait()
            except queue.Empty:
                return self.lines
            if line is not None:
                self.lines.append(line)


# PostgreSQL's protocol, as much as a server that is starting up says: "no" to the
# requests for TLS or GSS encryption, then an ErrorResponse (SQLSTATE 57P03) to the
# startup message.
_ENCRYPTION_REQUESTS = (80877103, 80877104)
_STARTING_UP = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0"


class TcpProxy:
    """Forwards 127.0.0.1:port to a target, in a thread with its own event loop: the
    database server "comes up" on the port when it starts. While ``starting_up`` is set,
    it answers as PostgreSQL does while it starts, instead."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.port = port
        self.target = target
        self.starting_up = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.writers: set[asyncio.StreamWriter] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _refuse_starting_up(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                length, code = struct.unpack("!ii", await reader.readexactly(8))
                if code in _ENCRYPTION_REQUESTS:
                    writer.write(b"N")
                    continue
                await reader.readexactly(length - 8)
                writer.write(b"E" + struct.pack("!i", len(_STARTING_UP) + 4) + _STARTING_UP)
                await writer.drain()
                break
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        if self.starting_up.is_set():
            await self._refuse_starting_up(reader, writer)
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    def __enter__(self) -> TcpProxy:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(timeout=10)
        return self

    def __exit__(self, *_exc: object) -> None:
        async def stop() -> None:
            self.server.close()
            for writer in self.writers:  # connections still piped: their sockets go too
                writer.close()
            others = asyncio.all_tasks() - {asyncio.current_task()}
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class TestWaitForDatabase:
    def test_migrate_waits_until_the_server_comes_up(self, tmp_path: Path, pg_fresh: str):
        port = free_port()  # nothing listens there yet
        upstream = make_url(pg_fresh)
        password = password_of(pg_fresh)
        url = pg_with(pg_fresh, host="127.0.0.1", port=port, password=password)
        env = base_env(tmp_path, database_url=url, database_wait_seconds="60")
        with subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", "migrate"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:  # its pipes closed at the end
            try:
                stderr = Lines(proc.stderr)
                first = stderr.wait_for(
                    lambda line: "(attempt 1," in line, 30, "reporting the first attempt"
                )
                with TcpProxy(port, (upstream.host or "127.0.0.1", upstream.port or 5432)):
                    assert proc.wait(timeout=90) == 0, "\n".join(stderr.rest())
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            lines = stderr.rest()
            assert first.startswith("database not reachable yet (attempt 1,")
            assert f"127.0.0.1:{port}" in first and "***" in first
            # The attempts, then the database it works on (tests/cli/test_database.py).
            *attempts, named = lines
            assert all(line.startswith("database not reachable yet (attempt ") for line in attempts)
            assert (
                named
                == f"database: {describe_url(url.replace('postgresql:', 'postgresql+asyncpg:'))}"
            )
            assert f":{password}@" not in "\n".join(lines)
            assert proc.stdout is not None and "schema up to date" in proc.stdout.read()
        assert table_exists(pg_fresh, "alembic_version")

    def test_serve_waits_while_the_server_starts_up(self, tmp_path: Path, pg_fresh: str):
        port = free_port()
        upstream = make_url(pg_fresh)
        url = pg_with(pg_fresh, host="127.0.0.1", port=port)
        env = base_env(tmp_path, database_url=url, database_wait_seconds="60")
        proxy = TcpProxy(port, (upstream.host or "127.0.0.1", upstream.port or 5432))
        proxy.starting_up.set()
        with (
            proxy,
            serving(
                env, port=free_port(), until=lambda lines: self.starting_up_then_up(lines, proxy)
            ) as (_proc, lines, _port),
        ):
            pass
        attempts = [line for line in lines.rest() if "not reachable yet" in line]
        assert attempts and all("the database system is starting up" in line for line in attempts)

    @staticmethod
    def starting_up_then_up(lines: Lines, proxy: TcpProxy) -> None:
        lines.wait_for(lambda line: "(attempt 1," in line, 30, "reporting the first attempt")
        proxy.starting_up.clear()

    def test_gives_up_after_the_wait(self, tmp_path: Path):
        url = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
        result = cli("migrate", env=base_env(tmp_path, database_url=url, database_wait_seconds="1"))
        lines = result.stderr.splitlines()
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert len(lines) >= 2, result.stderr
        assert all(line.startswith("database not reachable yet (attempt ") for line in lines[:-1])
        assert lines[-1].startswith("error: cannot connect to the database")
        assert "gave up after" in lines[-1]

    def test_what_waiting_cannot_fix_fails_at_once(self, tmp_path: Path, pg_base: str):
        name = f"cloudadmin_missing_{uuid.uuid4().hex[:8]}"
        env = base_env(
            tmp_path, database_url=pg_with(pg_base, database=name), database_wait_seconds="600"
        )
        result = cli("migrate", env=env, timeout=60)
        assert_one_line_error(result, f'database "{name}" does not exist')


@contextlib.contextmanager
def serving(
    env: dict[str, str],
    port: int | None = None,
    until: Callable[[Lines], None] | None = None,
) -> Iterator[tuple[subprocess.Popen, Lines, int]]:
    """A `serve` process, healthy (after ``until`` saw its start if given)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = Lines(proc.stderr)
    try:
        if until is not None:
            until(lines)
        wait_until_healthy(f"http://127.0.0.1:{port}", proc, lambda: "\n".join(lines.rest()))
        yield proc, lines, port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_slow_request(port: int) -> tuple[socket.socket, bytes]:
    """A POST whose body has not arrived in full: the request is in flight (the app
    reads the body before it answers) until the rest is sent."""
    body = b'{"email": "slow@sales.example", "full_name": "Slow"}'
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)
    conn.sendall(
        b"POST /iam/admin/sellers HTTP/1.1\r\nHost: test\r\n"
        b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body[:10]
    )
    # A round trip on another connection: the server has read the first one's headers
    # by then (they were sent first, on loopback), so its request is in flight.
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
    return conn, body[10:]


class TestShutdownGrace:
    def test_request_in_flight_is_answered_after_sigterm(self, tmp_path: Path):
        env = base_env(
            tmp_path,
            database_url=f"sqlite:///{tmp_path}/grace.db",
            body_timeout_seconds="120",
            shutdown_grace_seconds="60",
        )
        with serving(env) as (proc, lines, port):
            conn, rest = start_slow_request(port)
            with conn:
                proc.send_signal(signal.SIGTERM)
                lines.wait_for(
                    lambda line: "Waiting for connections to close" in line,
                    30,
                    "saying it waits for the request in flight",
                )
                conn.sendall(rest)
                answer = conn.recv(65536)
            # No key: the app read the body in full, then refused the caller.
            assert answer.startswith(b"HTTP/1.1 401"), answer
            assert proc.wait(timeout=60) == 0, "\n".join(lines.rest())

    def test_request_past_the_grace_is_cancelled(self, tmp_path: Path):
        env = base_env(
            tmp_path,
            database_url=f"sqlite:///{tmp_path}/grace.db",
            body_timeout_seconds="120",
            shutdown_grace_seconds="1",
        )
        with serving(env) as (proc, lines, port):
            conn, _rest = start_slow_request(port)
            with conn:
                proc.send_signal(signal.SIGTERM)
                # Well before the body timeout (120 s) or the default grace (30 s).
                assert proc.wait(timeout=20) == 0, "\n".join(lines.rest())
        assert any("timeout graceful shutdown exceeded" in line for line in lines.rest())

    def test_worker_stops_on_sigterm(self, tmp_path: Path):
        env = base_env(tmp_path, database_url=f"sqlite:///{tmp_path}/worker.db")
        # The worker works on a migrated database only (tests/cli/test_database.py).
        assert cli("migrate", env=env).returncode == 0
        proc = subprocess.Popen(
            [sys.executable, "-m", "cloudadmin", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = Lines(proc.stderr)
        try:
            lines.wait_for(
                lambda line: "started" in line and "worker" in line, 60, "saying the worker started"
            )
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0, "\n".join(lines.rest())
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert any("stopped" in line for line in lines.rest())


class TestWorkerGrace:
    """How `cloudadmin worker` ends its dispatcher after SIGTERM (events/worker.py)."""

    async def run(self, after_stop: float, grace: float) -> tuple[asyncio.Task[None], float]:
        from cloudadmin.events.worker import _stopped_within

        stop = asyncio.Event()
        stopped = asyncio.Event()

        async def dispatcher() -> None:  # a delivery that takes ``after_stop`` to end
            await stop.wait()
            stopped.set()
            await asyncio.sleep(after_stop)

        running = asyncio.create_task(dispatcher())
        ends = asyncio.create_task(_stopped_within(running, stop, grace))
        stop.set()
        await stopped.wait()
        started = time.monotonic()
        await asyncio.wait_for(ends, 30)
        return running, time.monotonic() - started

    async def test_work_within_the_grace_ends_in_order(self):
        running, _ = await self.run(after_stop=0.05, grace=30)
        assert running.done() and not running.cancelled()

    async def test_work_past_the_grace_is_cancelled(self):
        running, took = await self.run(after_stop=3600, grace=0.2)
        assert running.cancelled()
        assert took < 30
