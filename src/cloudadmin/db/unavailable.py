"""Which database errors mean "the database cannot serve now" (answered 503 with
Retry-After) rather than a bug: the same for a wrong database name or user as for a
closed port."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

# PostgreSQL SQLSTATE classes and codes (appendix A of its manual): 08 connection
# exception, 28 invalid authorization (unknown role, wrong password), 3D000 no such
# database, 53 insufficient resources (too many connections, disk full), 57P01-57P04
# shutdown, crash, starting up, database dropped.
_PG_CLASSES = ("08", "28", "53")
_PG_CODES = frozenset({"3D000", "57P01", "57P02", "57P03", "57P04"})

# SQLite: the file cannot be opened or created (missing directory, permissions).
_SQLITE_MESSAGES = ("unable to open database file",)


def is_unavailable(exc: BaseException) -> bool:
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if isinstance(code, str) and (code[:2] in _PG_CLASSES or code in _PG_CODES):
        return True
    message = str(exc.orig).lower()
    return any(text in message for text in _SQLITE_MESSAGES)
