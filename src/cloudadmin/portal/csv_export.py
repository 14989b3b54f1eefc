"""A CSV download, streamed: rows are read from the database as they are written out,
on a read connection of their own (the page's transaction has ended by the time the
body is sent), in chunks, so memory stays flat whatever the number of rows.

A cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) is written with a leading apostrophe (OWASP's "CSV
injection"); numbers are written as they are; an instant with a time zone is written
as the API writes it, RFC 3339 in UTC with a ``Z`` (microseconds only when there are
any).

The connection: without ``cursor``, one of the read engine, each statement committed on
its own (reads in keyset batches run there on the driver, db/driver.py). With
``cursor=True`` the rows come through one server-side cursor (``AsyncConnection.stream``),
which PostgreSQL keeps only inside a transaction: the download then holds a read-only
``REPEATABLE READ`` transaction, so the whole file is one snapshot; on SQLite a single
statement is its own snapshot already, and the read engine's connection (no
``BEGIN IMMEDIATE``, no write lock) is used.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import StreamingResponse

from cloudadmin.auth.app_state import app_state

# Rows per chunk of the body (a few hundred kilobytes: few sends, flat memory).
CHUNK_ROWS = 2_000
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Rows = Callable[[AsyncConnection], AsyncIterator[Sequence[Any]]]
# Rows handed over a batch at a time (a cursor's fetch): less per-row overhead.
Batches = Callable[[AsyncConnection], AsyncIterator[Sequence[Sequence[Any]]]]


def _instant(value: datetime) -> str:
    if value.tzinfo is None:
        return value.isoformat()
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z"  # "+00:00"


def cell(value: Any) -> Any:
    kind = type(value)
    if kind is int or kind is float:
        return value
    if kind is str:
        return "'" + value if value.startswith(_FORMULA_STARTS) else value
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, datetime):
        return _instant(value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


@asynccontextmanager
async def _connection(request: Request, cursor: bool) -> AsyncIterator[AsyncConnection]:
    state = app_state(request.app)
    if not cursor or state.engine.dialect.name != "postgresql":
        async with state.read_engine.connect() as conn:
            yield conn
        return
    snapshot = state.engine.execution_options(
        isolation_level="REPEATABLE READ", postgresql_readonly=True
    )
    async with snapshot.connect() as conn, conn.begin():
        yield conn


async def _batches_of(rows: Rows, conn: AsyncConnection) -> AsyncIterator[Sequence[Sequence[Any]]]:
    batch: list[Sequence[Any]] = []
    async for row in rows(conn):
        batch.append(row)
        if len(batch) >= CHUNK_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def _cells(batch: Sequence[Sequence[Any]], text_columns: Sequence[int] | None) -> Iterable[Any]:
    """The batch's rows as CSV cells: every value through :func:`cell`, or, when the
    producer names its text columns, those only (column by column, one ``map`` each)."""
    if text_columns is None:
        return [[cell(value) for value in row] for row in batch]
    columns: list[Iterable[Any]] = list(zip(*batch, strict=True))
    for i in text_columns:
        columns[i] = map(_text_cell, columns[i])
    return zip(*columns, strict=True)


def _text_cell(value: str | None) -> str:
    if value is None:
        return ""
    return "'" + value if value.startswith(_FORMULA_STARTS) else value


async def _body(
    request: Request,
    header: Sequence[str],
    batches: Batches,
    cursor: bool,
    text_columns: Sequence[int] | None = None,
) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    pending = 0
    async with _connection(request, cursor) as conn:
        async for batch in batches(conn):
            writer.writerows(_cells(batch, text_columns))
            pending += len(batch)
            if pending >= CHUNK_ROWS:
                yield buffer.getvalue().encode()
                buffer.seek(0)
                buffer.truncate()
                pending = 0
    yield buffer.getvalue().encode()


def _response(body: AsyncIterator[bytes], filename: str) -> StreamingResponse:
    disposition = f"attachment; filename*=UTF-8''{quote(filename)}"
    return StreamingResponse(
        body,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )


def csv_download(
    request: Request, filename: str, header: Sequence[str], rows: Rows
) -> StreamingResponse:
    """``rows(conn)`` yields the rows, on a read connection of the download's own."""

    def batches(conn: AsyncConnection) -> AsyncIterator[Sequence[Sequence[Any]]]:
        return _batches_of(rows, conn)

    return _response(_body(request, header, batches, cursor=False), filename)


def csv_batches_download(
    request: Request,
    filename: str,
    header: Sequence[str],
    batches: Batches,
    *,
    cursor: bool = False,
    text_columns: Sequence[int] | None = None,
) -> StreamingResponse:
    """``batches(conn)`` yields lists of rows (a cursor's fetches). With ``cursor``, the
    connection allows a server-side cursor (see the module's docstring). With
    ``text_columns``, only those columns (text or None) are checked for formulas, and
    every other value is written as it is: the producer promises numbers, None, or text
    no spreadsheet runs (instants it wrote, values of a fixed catalogue)."""
    return _response(_body(request, header, batches, cursor, text_columns), filename)
