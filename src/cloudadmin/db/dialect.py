"""SQL spelled per database that more than one domain needs, or that is the database's
own machinery rather than a domain's query: an upsert, an INSERT that does not wait for
its commit to reach the disk, text in code point order, sequences moved past explicit
ids, NOTIFY, the arguments of a connection of our own (LISTEN, session advisory locks),
and bulk loading (COPY; indexes and constraints set aside and restored).

A branch on the database may also live, and only, in (docs/architecture.md, "Where
dialect code lives"):

- the rest of db/: how values and statements reach each driver (types.py, driver.py,
  engine.py) and schema objects one database alone has (a model's ``ddl_if``, migrations);
- the domain module that owns the one statement or behaviour it spells, when no other
  domain needs it: a repository's or query module's faster or only spelling on one
  database (the addendum list's arrays, trigram lookup and JSON projection, the monthly
  report's day arithmetic, an export's server-side cursor), and a choice of how rather
  than what (the activity log batching reads' rows, the dispatcher's lock, SKIP LOCKED
  and LISTEN in events/). Beside its statement, the branch changes with it, and the
  tests run it on both databases.

Never in web/, auth/, kit/, observability/, logs or errors: they pass the dialect's name
along at most (tests/db/test_dialect_places.py). Choosing the driver from the database
URL is configuration (config.py, startup.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Collection, Iterable, Mapping, Sequence
from typing import Any, BinaryIO

from sqlalchemy import ColumnElement, Table, func, insert, literal_column, select, text, true
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql.dml import Insert


def upsert(dialect_name: str, table: Table, columns: Iterable[str]) -> Insert:
    """``INSERT .. ON CONFLICT (primary key) DO UPDATE`` setting ``columns``.

    Meant for executemany: every row bound to it must carry the same keys. Columns
    left out of ``columns`` keep their stored value on update and take their
    default on insert (a ``created_at`` that a document does not give, say).
    """
    stmt: postgresql.Insert | sqlite.Insert
    if dialect_name == "postgresql":
        stmt = postgresql.insert(table)
    elif dialect_name == "sqlite":
        stmt = sqlite.insert(table)
    else:
        raise NotImplementedError(f"upsert on {dialect_name}")
    keys = [c.name for c in table.primary_key.columns]
    updates = {name: stmt.excluded[name] for name in columns if name not in keys}
    if not updates:
        return stmt.on_conflict_do_nothing(index_elements=keys)
    return stmt.on_conflict_do_update(index_elements=keys, set_=updates)


def insert_without_flush_wait(
    dialect_name: str, table: Table, values: Mapping[str, ColumnElement[Any]]
) -> Insert:
    """An INSERT of one row that, run on its own (autocommit: its own transaction), does
    not wait for that transaction's WAL to reach the disk before it answers.

    PostgreSQL: the row is selected from a subquery that runs ``set_config(
    'synchronous_commit', 'off', true)``, which lasts for the statement's own transaction
    and is read when it commits: one round trip, as the plain INSERT. The row is
    committed and visible at once; a crash of the database (not of the service) may lose
    the last fraction of a second of such rows (docs/activity-log.md, "Durability").
    Inside a larger transaction it would relax that transaction's commit: only for a
    statement that is its own transaction. SQLite: the plain INSERT.
    """
    if dialect_name != "postgresql":
        return insert(table).values(dict(values))
    relaxed = select(
        func.set_config(literal_column("'synchronous_commit'"), literal_column("'off'"), true())
    ).subquery("relaxed")
    return insert(table).from_select(list(values), select(*values.values()).select_from(relaxed))


def code_point_order(dialect_name: str, column: Any) -> Any:
    """``column`` compared by code point, as SQLite's BINARY collation compares text:
    PostgreSQL's database collation would order by language rules, so the same ordering
    parameter gave another order there. Collation "C" over UTF-8 is code point order."""
    return column.collate("C") if dialect_name == "postgresql" else column


def has_sequence(table: Table) -> bool:
    """Whether new rows of ``table`` get generated integer ids."""
    column = table.autoincrement_column
    return column is not None and column.name == "id"


async def continue_sequences(conn: AsyncConnection | AsyncSession, tables: Sequence[Table]) -> None:
    """Make ids generated later start above the highest id now stored.

    PostgreSQL sequences do not notice rows inserted with explicit ids, so each
    one is moved up to ``max(id)`` (never down: a sequence that is already ahead,
    because rows were deleted, stays where it is). SQLite needs nothing: an
    ``INTEGER PRIMARY KEY`` without AUTOINCREMENT always takes ``max(rowid) + 1``.
    """
    bind = conn.get_bind() if isinstance(conn, AsyncSession) else conn
    if bind.dialect.name != "postgresql":
        return
    for table in tables:
        if not has_sequence(table):
            continue
        seq = (
            await conn.execute(select(func.pg_get_serial_sequence(table.name, "id")))
        ).scalar_one_or_none()
        if seq is None:  # an id column without a sequence (identity columns are not used)
            continue
        highest = (await conn.execute(select(func.max(table.c.id)))).scalar_one_or_none()
        if highest is None:
            continue
        # The name comes back quoted and schema-qualified from PostgreSQL itself.
        last, called = (await conn.execute(text(f"SELECT last_value, is_called FROM {seq}"))).one()
        next_value = last + 1 if called else last
        if highest >= next_value:
            await conn.execute(select(func.setval(seq, highest, True)))


async def notify(session: AsyncSession, channel: str) -> None:
    """``NOTIFY channel`` in the session's transaction: PostgreSQL delivers it to the
    channel's listeners when (and only if) the transaction commits, once however often
    it was sent. SQLite has no notifications: nothing to send."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(channel, "")))


def asyncpg_connect_args(url: str) -> dict[str, Any]:
    """What SQLAlchemy's asyncpg dialect passes to ``asyncpg.connect`` for ``url``: a
    connection of our own (a LISTEN, a session-level advisory lock) outside any pool."""
    from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect
    from sqlalchemy.engine import make_url

    _, params = asyncpg_dialect().create_connect_args(make_url(url))
    for adapter_only in (
        "prepared_statement_cache_size",
        "prepared_statement_name_func",
        "async_creator_fn",
    ):
        params.pop(adapter_only, None)
    return dict(params)


# --- bulk loading into an empty table (PostgreSQL) ---


async def copy_rows(
    conn: AsyncConnection,
    table: Table,
    columns: Sequence[str],
    records: Iterable[Sequence[Any]] | AsyncIterable[Sequence[Any]],
) -> None:
    """``COPY table (columns) FROM STDIN`` in the connection's transaction (PostgreSQL).

    asyncpg's binary COPY through the driver connection SQLAlchemy hands out: no
    statement per row, no conflict handling. The connection's transaction must be
    open already (any statement run through ``conn`` opens it).
    """
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    await driver.copy_records_to_table(
        table.name, columns=list(columns), records=records, schema_name=table.schema
    )


async def copy_text(
    conn: AsyncConnection, table: Table, columns: Sequence[str], source: BinaryIO
) -> None:
    """``COPY table (columns) FROM STDIN`` of ``source``, a file of COPY's text format,
    read by the server as it comes (PostgreSQL; as ``copy_rows``)."""
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    await driver.copy_to_table(
        table.name, source=source, columns=list(columns), schema_name=table.schema, format="text"
    )


async def set_aside_indexes(
    conn: AsyncConnection, table: Table, keep: Collection[str] = ()
) -> list[str]:
    """Drops ``table``'s secondary indexes (but those named in ``keep``) and its foreign
    keys; returns the statements that create them again (PostgreSQL).

    Filling an empty table and building its indexes once costs a fraction of
    maintaining them row by row, and a foreign key added over a full table is
    checked by one join instead of one deferred lookup per row. The primary key
    stays (its ids arrive mostly in order), and so do the indexes in ``keep``: the
    caller's choice of those that cost less kept up row by row than built afterwards.
    Read from the catalog, so the indexes of later migrations are kept as they are
    defined.
    """
    name = table.name
    indexes = (
        await conn.execute(
            text(
                "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i"
                " JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE i.indrelid = CAST(:table AS regclass) AND NOT i.indisprimary"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
                " ORDER BY c.relname"
            ),
            {"table": name},
        )
    ).all()
    restore: list[str] = []
    for index, definition in indexes:
        if index in keep:
            continue
        await conn.execute(text(f'DROP INDEX "{index}"'))
        restore.append(definition)
    return restore + await _set_aside_constraints(conn, name, "f")


async def set_aside_primary_key(conn: AsyncConnection, name: str) -> list[str]:
    """Drops table ``name``'s primary key; returns the statement that adds it again
    (PostgreSQL). For a table about to be filled with many rows in key order: one
    index build after the rows costs less than an insertion into the index per row.
    The table is locked (``ACCESS EXCLUSIVE``) until the transaction ends."""
    return await _set_aside_constraints(conn, name, "p")


async def _set_aside_constraints(conn: AsyncConnection, name: str, kind: str) -> list[str]:
    """Drops table ``name``'s constraints of ``kind`` (``pg_constraint.contype``: "f"
    foreign keys, "p" the primary key); returns the statements that add them again."""
    constraints = (
        await conn.execute(
            text(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = CAST(:table AS regclass) AND CAST(contype AS text) = :kind"
                " ORDER BY conname"
            ),
            {"table": name, "kind": kind},
        )
    ).all()
    restore: list[str] = []
    for constraint, definition in constraints:
        await conn.execute(text(f'ALTER TABLE "{name}" DROP CONSTRAINT "{constraint}"'))
        restore.append(f'ALTER TABLE "{name}" ADD CONSTRAINT "{constraint}" {definition}')
    return restore
