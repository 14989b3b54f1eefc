"""Hot statements run on the driver's own connection (asyncpg, aiosqlite).

SQLAlchemy still builds, caches and compiles every statement, with its dialects and
its type processors; only its execution layer is skipped: the execution context, the cursor
adapter and the result object cost 0.22 ms of CPU per prepared statement in a tight
loop and 0.4–0.8 ms in a request, against 0.07 ms on the asyncpg connection (measured
in the previous round of this work), and a list request runs four
(docs/architecture.md, "Statements on the driver connection").

Only a connection without an explicit transaction takes this path (a read request's:
``db.engine.autocommit_engine``): SQLAlchemy's asyncpg adapter opens its transaction
lazily, on its own first statement, and a statement sent past it would escape that
transaction. Any other connection goes the ordinary way, and so does a statement the
database or its driver refused: it is replayed through ``AsyncConnection.execute``,
which raises exactly what it always raised (a lost connection invalidated and flagged,
a database error wrapped in ``DBAPIError``). Only the driver's own errors are replayed,
and each replay is a *fallback*: counted (:func:`fallback_count`) and logged as a
warning, and the test suite fails on one it did not expect (tests/driver_guard.py). Any
other exception (a bug of this module) propagates as it is.

Statements come as :class:`Static`: built once, their values as named parameters, so
each is compiled once per dialect and no cache key is computed per execution. Binding
uses SQLAlchemy's public compiled API only (``construct_params``,
``construct_expanded_state``, ``positiontup``, ``bind_names``, and each type's
``bind_processor``); every list, auth and activity-log test runs through here.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import asyncpg
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import Compiled
from sqlalchemy.sql.sqltypes import TupleType

from cloudadmin.db.engine import is_autocommit

Processor = Callable[[Any], Any] | None

log = logging.getLogger("cloudadmin.db.driver")

# What a driver raises for a statement it or its database refused, or a connection it
# lost: replayed through SQLAlchemy for SQLAlchemy's own error. Anything else is a bug
# here and propagates.
_DRIVER_ERRORS: dict[str, tuple[type[BaseException], ...]] = {
    # InternalClientError: a connection whose server went away can be left mid-protocol
    # ("cannot switch to state ..."; seen in tests/web/test_route.py's lost connections).
    "postgresql": (
        asyncpg.PostgresError,
        asyncpg.InterfaceError,
        asyncpg.exceptions.InternalClientError,
        OSError,
    ),
    "sqlite": (sqlite3.Error, ValueError),  # aiosqlite: ValueError on a closed connection
}

_fallbacks = 0


def fallback_count() -> int:
    """How many statements this process replayed through SQLAlchemy after the driver
    refused them (a database error, a lost connection)."""
    return _fallbacks


class _Entry:
    """A statement compiled for one dialect, with its result processors."""

    __slots__ = ("compiled", "binds", "results", "fixed")

    def __init__(
        self,
        compiled: Compiled,
        binds: dict[str, Processor],
        results: list[Processor] | None,
        fixed: _Fixed | None = None,
    ) -> None:
        self.compiled = compiled
        self.binds = binds
        self.results = results
        self.fixed = fixed


def _bind_processors(compiled: Any, dialect: Dialect) -> dict[str, Processor]:
    """Each bind parameter's processor by its compiled name: its type's, as the dialect
    implements it (a TypeDecorator's ``process_bind_param`` included), which is what
    SQLAlchemy's execution applies."""
    processors: dict[str, Processor] = {}
    for bind, name in compiled.bind_names.items():
        if isinstance(bind.type, TupleType):
            # A tuple IN takes one processor per element; no hot statement has one.
            raise TypeError(f"db/driver.py does not bind tuple parameters ({name})")
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            processors[name] = process
    return processors


# Per position of a Static statement's SQL: the parameter's key and name, its bind
# parameter (for a default value) and its bind processor.
_Position = tuple[str, str, Any, Processor]


class _Fixed:
    """A Static statement with no IN list to expand: its SQL is the compiled string, and
    its arguments are its named parameters in a known order, which is what
    ``construct_params`` and ``construct_expanded_state`` would work out on every
    execution (checked against them in tests/db/test_driver.py)."""

    __slots__ = ("sql", "positions")

    def __init__(self, sql: str, positions: tuple[_Position, ...]) -> None:
        self.sql = sql
        self.positions = positions

    @classmethod
    def of(cls, compiled: Any, processors: Mapping[str, Processor]) -> _Fixed | None:
        # Post-compile parameters (IN lists, literal_execute, render_postcompile) change
        # the SQL per execution; escaped names differ from the keys given.
        if (
            compiled.post_compile_params
            or compiled.literal_execute_params
            or compiled.escaped_bind_names
        ):
            return None
        by_name = {name: bind for bind, name in compiled.bind_names.items()}
        # Values given to the statement with ``.params()`` are not on its bind
        # parameters: construct_params knows them, and a statement with any takes the
        # general path.
        placeholders = {name: None for name, bind in by_name.items() if bind.required}
        defaults = compiled.construct_params(placeholders, escape_names=False)
        if any(
            name not in placeholders and defaults[name] is not by_name[name].effective_value
            for name in by_name
        ):
            return None
        return cls(
            compiled.string,
            tuple(
                (by_name[name].key, name, by_name[name], processors.get(name))
                for name in compiled.positiontup or ()
            ),
        )

    def arguments(self, params: Mapping[str, Any] | None) -> list[Any] | None:
        """The positional arguments; None when a required value is missing (the general
        path then raises SQLAlchemy's own error)."""
        params = params or {}
        args = []
        for key, name, bind, process in self.positions:
            if key in params:
                value = params[key]
            elif name in params:
                value = params[name]
            elif bind.required:
                return None
            else:
                value = bind.effective_value
            args.append(process(value) if process is not None else value)
        return args


class Static:
    """A statement built once whose values all come as named parameters.

    Compiled once per dialect and kept on the object: no cache key is computed per
    execution (for a statement built per request, SQLAlchemy's ``_generate_cache_key``
    walks it to find its values; here there are none to find). A value written into the
    statement (``col + 0``) is its bind parameter's default. Keep such statements for the
    life of the process, or in a bounded cache (billing/addendums/repository.py).
    """

    __slots__ = ("stmt", "_entries")

    def __init__(self, stmt: ClauseElement) -> None:
        self.stmt = stmt
        self._entries: dict[str, _Entry] = {}

    def entry(self, dialect: Dialect) -> _Entry:
        entry = self._entries.get(dialect.name)
        if entry is None:
            compiled = self.stmt.compile(dialect=dialect)
            binds = _bind_processors(compiled, dialect)
            entry = _Entry(
                compiled, binds, _result_processors(self.stmt, dialect), _Fixed.of(compiled, binds)
            )
            self._entries[dialect.name] = entry
        return entry


def _result_processors(stmt: Any, dialect: Dialect) -> list[Processor] | None:
    columns = getattr(stmt, "selected_columns", None)
    if columns is None:  # INSERT/UPDATE/DELETE without RETURNING
        return None
    processors = [col.type.dialect_impl(dialect).result_processor(dialect, None) for col in columns]
    return processors if any(processors) else None


def _driver_arguments(entry: _Entry, params: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """The SQL (IN lists expanded) and its positional arguments, bind-processed, as
    SQLAlchemy's own execution works them out (engine/default.py)."""
    compiled: Any = entry.compiled
    state = compiled.construct_expanded_state(params, escape_names=False)
    # The statement's processors, plus those of the names an IN list expanded into (as
    # DefaultExecutionContext merges them).
    processors = entry.binds
    if state.processors:
        processors = {**processors, **state.processors}
    bound = state.parameters
    args = []
    for name in state.positiontup or ():
        value = bound[name]
        process = processors.get(name)
        args.append(process(value) if process is not None else value)
    return state.statement, args


async def _pooled_connection(conn: AsyncConnection) -> PoolProxiedConnection:
    """The pooled connection ``conn`` holds. ``get_raw_connection`` hops into a greenlet
    to read it (15 µs of CPU, three times a list request); a connection that is neither
    closed nor invalidated holds it already, and ``Connection.connection`` then does no
    I/O (it reconnects only an invalidated one, which needs the greenlet)."""
    sync = conn.sync_connection
    if sync is not None and not sync.invalidated and not sync.closed:
        return sync.connection
    return await conn.get_raw_connection()


async def _run_on_driver(conn: AsyncConnection, sql: str, args: list[Any]) -> list[Any]:
    fairy = await _pooled_connection(conn)
    driver: Any = fairy.driver_connection
    if conn.dialect.name == "postgresql":
        return list(await driver.fetch(sql, *args))
    # aiosqlite: the statement and its rows in one hand-off to the connection's thread.
    return list(await driver.execute_fetchall(sql, args))


async def _through_sqlalchemy(
    conn: AsyncConnection, stmt: ClauseElement, params: Mapping[str, Any] | None
) -> Sequence[Sequence[Any]]:
    result = await conn.execute(stmt, params)  # type: ignore[call-overload]
    return result.all() if result.returns_rows else []


async def fetch(
    conn: AsyncConnection, statement: Static, params: Mapping[str, Any] | None = None
) -> Sequence[Sequence[Any]]:
    """The rows of ``statement`` as tuples (or rows that unpack like them), types
    processed as SQLAlchemy would; for a statement without rows (an INSERT without the
    RETURNING SQLAlchemy adds on PostgreSQL), an empty list."""
    if not is_autocommit(conn):
        return await _through_sqlalchemy(conn, statement.stmt, params)
    entry = statement.entry(conn.dialect)
    fixed = entry.fixed
    args = fixed.arguments(params) if fixed is not None else None
    if fixed is not None and args is not None:
        sql = fixed.sql
    else:
        sql, args = _driver_arguments(entry, params)
    try:
        rows = await _run_on_driver(conn, sql, args)
    except _DRIVER_ERRORS.get(conn.dialect.name, ()) as exc:
        # Replayed the ordinary way, to raise what SQLAlchemy raises for it (a dead
        # connection is then invalidated and flagged as such; see web/route.py).
        global _fallbacks
        _fallbacks += 1
        log.warning(
            "statement replayed through SQLAlchemy after %s: %s",
            type(exc).__name__,
            sql.split("\n", 1)[0][:80],
        )
        return await _through_sqlalchemy(conn, statement.stmt, params)
    return _processed(rows, entry.results)


def _processed(rows: list[Any], processors: list[Processor] | None) -> list[Any]:
    """Rows as tuples with the columns that have a result processor processed."""
    if processors is None:
        return rows
    which = [(i, p) for i, p in enumerate(processors) if p is not None]
    out = []
    for row in rows:
        values = list(row)
        for i, process in which:
            value = values[i]
            if value is not None:
                values[i] = process(value)
        out.append(tuple(values))
    return out


async def scalar(
    conn: AsyncConnection, stmt: Static, params: Mapping[str, Any] | None = None
) -> Any:
    """The first column of the one row ``stmt`` returns."""
    rows = await fetch(conn, stmt, params)
    if len(rows) != 1:
        raise LookupError(f"expected one row, got {len(rows)}")
    return rows[0][0]
