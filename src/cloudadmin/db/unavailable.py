"""Which database errors mean "the database cannot serve now" (answered 503 with
Retry-After) rather than a bug: the same for a wrong database name or user as for a
closed port."""

from __future__ import annotations

import ssl

from sqlalchemy.exc import DBAPIError

# PostgreSQL SQLSTATE classes and codes (appendix A of its manual): 08 connection
# exception, 28 invalid authorization (unknown role, wrong password), 3D000 no such
# database, 53 insufficient resources (too many connections, disk full), 57P01-57P04
# shutdown, crash, starting up, database dropped.
_PG_CLASSES = ("08", "28", "53")
_PG_CODES = frozenset({"3D000", "57P01", "57P02", "57P03", "57P04"})

# SQLite: the file cannot be opened or created (missing directory, permissions).
_SQLITE_MESSAGES = ("unable to open database file",)


# Of those, the ones that waiting can fix without a change of configuration: the server
# is not up yet (08 connection exception, 57P03 starting up), unlike a wrong database
# name, user or password.
_PG_NOT_YET_CLASSES = ("08",)
_PG_NOT_YET_CODES = frozenset({"57P03"})


def _sqlstate(exc: DBAPIError) -> str | None:
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code if isinstance(code, str) else None


def is_unavailable(exc: BaseException) -> bool:
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    code = _sqlstate(exc)
    if code is not None and (code[:2] in _PG_CLASSES or code in _PG_CODES):
        return True
    message = str(exc.orig).lower()
    return any(text in message for text in _SQLITE_MESSAGES)


def may_come_up(exc: BaseException) -> bool:
    """Whether a failed attempt to connect to a PostgreSQL server may succeed later as it
    is configured: the connection was refused, reset or timed out, the host name does not
    resolve yet (the driver raises OSError for all of these), or the server is starting."""
    if isinstance(exc, ssl.SSLError):  # a certificate or TLS setting: waiting won't help
        return False
    if isinstance(exc, OSError):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    code = _sqlstate(exc)
    return code is not None and (code[:2] in _PG_NOT_YET_CLASSES or code in _PG_NOT_YET_CODES)
