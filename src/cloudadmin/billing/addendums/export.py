"""The addendum list streamed whole: every addendum the list's filters match, for the
caller's scope, in the list's order, read through one server-side cursor a batch at a
time (the Admin Portal's CSV download; docs/portal.md, "Billing").

The filters, the scope and the order are the list's own (``filters.where``,
``ordering.order_by``), so a download holds exactly the rows the list pages through.
Memory stays flat whatever the number of rows: the database hands over ``BATCH_ROWS``
at a time (asyncpg's cursor, SQLite's ``fetchmany``), and nothing is kept once written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    case,
    func,
    literal_column,
    null,
    select,
    type_coerce,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import filters, ordering
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.billing.addendums.repository import dialect_of
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import A, addendums, clients

# Rows fetched from the database per round trip.
BATCH_ROWS = 5_000

# The columns of a row, in order: the list's item (schemas.Addendum) flattened.
HEADER = (
    "id", "client_id", "client_company_name", "status", "active_range_start",
    "active_range_end", "created_at", "currency_id", "currency_char_code",
    "currency_symbol", "plan_id", "plan_name", "product_id", "product_name",
    "product_internal_name",
)  # fmt: skip
# The columns of free text (a formula check for the CSV); the others are numbers,
# instants written here and values of the catalogue (statuses, codes, internal names).
TEXT_COLUMNS = (2, 9, 11, 13)


def _instant_text(column: Any, dialect: str) -> ColumnElement[Any]:
    """An instant as text, as the list writes it: UTC, ``T``, microseconds only when
    there are any, ``Z`` (NULL stays NULL). Written by the database: decoding a
    datetime and writing it again was most of a row's cost in Python."""
    if dialect == "postgresql":
        # As items_json writes it: '.000000' can only be the microseconds.
        utc = func.timezone(literal_column("'UTC'"), column)
        written = func.to_char(utc, literal_column("""'YYYY-MM-DD"T"HH24:MI:SS.US'"""))
        text = func.replace(written, ".000000", "") + "Z"
        # to_char writes no infinity: the driver reads -infinity and infinity as
        # Python's first and last instants, which the list writes as these.
        unwritten = case(
            (column.is_(None), null()),
            (column < literal_column("'epoch'"), "0001-01-01T00:00:00Z"),
            else_="9999-12-31T23:59:59.999999Z",
        )
        return func.coalesce(text, unwritten)
    # SQLite keeps 'YYYY-MM-DD HH:MM:SS.ffffff', in UTC (db/types.py).
    stored = type_coerce(column, String)
    return func.replace(func.replace(stored, " ", "T"), ".000000", "") + "Z"


@lru_cache(maxsize=256)
def _statement(shape: filters.Shape, order: Order) -> Select[Any]:
    """The matching rows in HEADER's order, in ``order``. The client is joined under an
    alias: the company-name filter's subquery reads ``clients`` itself and must not
    correlate with the join."""
    client = clients.alias("client")
    joined = addendums.outerjoin(client, client.c.id == A.client_id)
    dialect = shape.dialect
    return (
        select(
            A.id,
            A.client_id,
            func.coalesce(client.c.company_name, ""),
            A.status,
            _instant_text(A.active_start, dialect),
            _instant_text(A.active_end, dialect),
            _instant_text(A.created_at, dialect),
            A.currency_id,
            A.currency_char_code,
            A.currency_symbol,
            A.plan_id,
            A.plan_name,
            A.product_id,
            A.product_name,
            A.product_internal_name,
        )
        .select_from(joined)
        .where(*filters.clauses(shape))
        .order_by(*order)
    )


async def stream_addendums(
    conn: AsyncConnection, caller: Caller, q: AddendumQuery
) -> AsyncIterator[Sequence[Sequence[Any]]]:
    """Every addendum ``q`` filters for that ``caller`` sees, in ``q``'s order (its
    ``limit`` and ``offset`` are ignored), as batches of rows in HEADER's order; instants
    are text as the list writes them (an open end: None). ``conn`` must allow a
    server-side cursor: on PostgreSQL a connection in a transaction. A bad ordering field
    raises the list's 400 before anything is read."""
    dialect = dialect_of(conn)
    order = ordering.order_by(q.ordering, dialect)
    where = filters.where(q, caller, dialect)
    stmt = _statement(where.shape, order)
    result = await conn.stream(stmt.execution_options(yield_per=BATCH_ROWS), dict(where.params))
    try:
        async for part in result.partitions(BATCH_ROWS):
            yield part
    finally:
        await result.close()
