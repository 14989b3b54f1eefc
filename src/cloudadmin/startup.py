"""What a command checks before it works on the database: the settings, then one
connection, waiting for a database that is not reachable yet.

Every problem found is a :class:`StartupError` whose message is one line; the command
line prints it and exits 1 (cli.py), so a wrong URL reads as one sentence instead of a
traceback. A later failure of the same kind (the database went away between the check
and the migration) is mapped the same way by :func:`migrate`.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from cloudadmin.config import Settings, get_settings
from cloudadmin.db.unavailable import is_unavailable, may_come_up

# The drivers the service is written for (db/driver.py talks to their connections).
SUPPORTED_DRIVERS = {"postgresql": "asyncpg", "sqlite": "aiosqlite"}
EXAMPLES = "postgresql://user:password@host:5432/db or sqlite:///path/to/file.db"

# One connection attempt; asyncpg alone would wait 60 s for a host that drops packets.
ATTEMPT_TIMEOUT_SECONDS = 10.0
# Pauses between attempts: 0.5, 1, 2, 4, then 5 s.
FIRST_PAUSE_SECONDS = 0.5
LONGEST_PAUSE_SECONDS = 5.0

# A migration that fails for want of a privilege is a configuration problem too.
_PG_CONFIGURATION_CODES = frozenset({"42501"})  # insufficient_privilege

# user:password@ of a URL that cannot be parsed (up to the last @: passwords may hold @).
_CREDENTIALS = re.compile(r"(://[^:/@]*:).*@")

Report = Callable[[str], None]


class StartupError(Exception):
    """A problem of the configuration or the database found at start; one line."""


def load_settings() -> Settings:
    """The settings; a malformed setting is a StartupError naming its variable."""
    try:
        return get_settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"CLOUDADMIN_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        )  # never the value: it may be a secret
        raise StartupError(f"invalid setting: {problems}") from None


def describe_url(url: str) -> str:
    """The URL with its password hidden, also when it cannot be parsed."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _CREDENTIALS.sub(r"\1***@", url)


def check_settings(settings: Settings) -> None:
    """What can be checked without the database: the URL names a supported database
    and driver, and the secret key is there (set, or generated for the embedded
    database). Done before anything connects, so a missing key leaves the database
    untouched."""
    raw = settings.effective_database_url
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError) as exc:
        raise StartupError(
            f"CLOUDADMIN_DATABASE_URL is not a database URL ({describe_url(raw)}: "
            f"{_first_line(exc)}); use {EXAMPLES}"
        ) from None
    backend, _, driver = url.drivername.partition("+")
    if SUPPORTED_DRIVERS.get(backend) != driver:
        raise StartupError(
            f"CLOUDADMIN_DATABASE_URL names an unsupported database or driver "
            f"'{url.drivername}' ({describe_url(raw)}); use {EXAMPLES}"
        )
    try:
        settings.resolved_secret_key()
    except RuntimeError as exc:  # not set although the database is configured
        raise StartupError(str(exc)) from None
    except OSError as exc:  # the embedded default cannot keep its generated key
        raise StartupError(
            f"cannot keep the generated secret key in {settings.data_dir}: {exc}"
        ) from None


async def wait_for_database(settings: Settings, wait_seconds: float, report: Report) -> None:
    """Connects once; while the server is not reachable yet (refused, starting up, name
    not resolvable) tries again for up to ``wait_seconds``, reporting each failed
    attempt. Any other failure, or the last one, is a StartupError."""
    from cloudadmin.db.engine import is_sqlite_url

    url = settings.effective_database_url
    shown = describe_url(url)
    # A SQLite file that cannot be opened now will not open later either.
    can_wait = not is_sqlite_url(url)
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            await asyncio.wait_for(_connect_once(settings), ATTEMPT_TIMEOUT_SECONDS)
            return
        except Exception as exc:  # every failure becomes one line; see _reason
            reason = _reason(exc)
            waited = time.monotonic() - started
            left = wait_seconds - waited
            if not (can_wait and may_come_up(exc)) or left <= 0:
                given_up = (
                    f" (gave up after {attempt} attempts in {waited:.0f} s)" if attempt > 1 else ""
                )
                raise StartupError(
                    f"cannot connect to the database {shown}: {reason}{given_up}"
                ) from None
            pause = min(FIRST_PAUSE_SECONDS * 2 ** (attempt - 1), LONGEST_PAUSE_SECONDS, left)
            report(
                f"database not reachable yet (attempt {attempt}, {waited:.1f} s of "
                f"{wait_seconds:g} s): {shown}: {reason}; next attempt in {pause:.1f} s"
            )
            await asyncio.sleep(pause)


async def _connect_once(settings: Settings) -> None:
    from cloudadmin.db.engine import create_engine, is_sqlite_url

    try:
        engine = create_engine(settings)  # creates a SQLite file's directory
    except OSError as exc:
        raise OSError(
            f"cannot create the directory {exc.filename} of the database file: {exc.strerror}"
        ) from None
    try:
        if is_sqlite_url(url := settings.effective_database_url):
            # aiosqlite's thread may report a failed open after the loop has closed, a
            # traceback on stderr: the file is opened with the standard module first.
            path = make_url(url).database
            if path and path != ":memory:":
                sqlite3.connect(path).close()
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    finally:
        await engine.dispose()


def preflight(
    settings: Settings, *, wait_seconds: float, report: Report, create: bool = True
) -> None:
    """The settings checked, then the database reached (waiting up to ``wait_seconds``).

    Without ``create`` (every command but migrate, load and serve) a SQLite file that is
    not there is a StartupError before anything is opened: a command that reads or
    changes data never makes an empty database to work on. (A PostgreSQL database that
    does not exist is refused by the server.)"""
    if not create:  # before the embedded default's secret key is generated, too
        _require_sqlite_file(settings)
    check_settings(settings)
    asyncio.run(wait_for_database(settings, wait_seconds, report))


def _require_sqlite_file(settings: Settings) -> None:
    from cloudadmin.db.engine import is_sqlite_url

    url = settings.effective_database_url
    try:
        path = make_url(url).database if is_sqlite_url(url) else None
    except (ArgumentError, ValueError):  # check_settings says what is wrong with it
        return
    if not path or path == ":memory:" or Path(path).exists():
        return
    hint = ""
    demo = settings.data_dir / "demo.db"
    if settings.uses_embedded_default and not settings.demo and demo.exists():
        hint = f" (the demo's database is {demo}: set CLOUDADMIN_DEMO=true to use it)"
    raise StartupError(
        f"the database {describe_url(url)} does not exist{hint}; name yours with "
        f"CLOUDADMIN_DATABASE_URL, or create it with 'cloudadmin migrate'"
    )


def require_schema(settings: Settings) -> None:
    """The database's schema is this version's: a command that is not migrate, load or
    serve works only on a migrated database, and never migrates it (a deployment
    migrates once, before its processes start; docs/deployment.md)."""
    from cloudadmin.db.migrate import current_revision, head_revision

    url = settings.effective_database_url
    try:
        found = current_revision(url)
    except Exception as exc:
        if not (isinstance(exc, OSError) or is_unavailable(exc)):
            raise
        raise StartupError(
            f"cannot read the schema of the database {describe_url(url)}: {_reason(exc)}"
        ) from None
    wanted = head_revision()
    if found == wanted:
        return
    state = "has no schema" if found is None else f"has schema revision {found}, not {wanted}"
    raise StartupError(f"the database {describe_url(url)} {state}: run 'cloudadmin migrate' first")


def migrate(settings: Settings) -> None:
    """Brings the schema up to date; a database that cannot be reached, or a user who
    may not change the schema, is a StartupError (a failing migration is not)."""
    from cloudadmin.db.migrate import upgrade

    try:
        upgrade(settings.effective_database_url)
    except Exception as exc:
        if not (isinstance(exc, OSError) or is_unavailable(exc) or _configuration(exc)):
            raise
        raise StartupError(
            f"cannot migrate the database {describe_url(settings.effective_database_url)}: "
            f"{_reason(exc)}"
        ) from None


def _configuration(exc: BaseException) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return isinstance(exc, DBAPIError) and code in _PG_CONFIGURATION_CODES


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):  # asyncio.wait_for's own
        return f"no answer within {ATTEMPT_TIMEOUT_SECONDS:g} s"
    if isinstance(exc, ImportError):
        return f"database driver not installed ({exc})"
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return _first_line(exc.orig)
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
