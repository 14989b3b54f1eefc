"""A CSV download, streamed: rows are read from the database as they are written out,
on a read connection of their own (the page's transaction has ended by the time the
body is sent), in chunks, so memory stays flat whatever the number of rows.

A cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) is written with a leading apostrophe (OWASP's "CSV
injection"); numbers are written as they are; an instant with a time zone is written
as the API writes it, RFC 3339 in UTC with a ``Z`` (microseconds only when there are
any).

Two ways in: :func:`csv_download` writes the rows a producer yields, and
:func:`csv_text_download` sends lines a producer has already written as CSV (the
addendum list's are written by the database: billing/addendums/export.py).

The connection: by default one of the read engine, each statement committed on its own
(reads in keyset batches run there on the driver, db/driver.py). With ``cursor=True``
the lines come through one server-side cursor (``AsyncConnection.stream``), which
PostgreSQL keeps only inside a transaction: the download then holds a read-only
``REPEATABLE READ`` transaction, so the whole file is one snapshot; on SQLite a single
statement is its own snapshot already, and the read engine's connection (no
``BEGIN IMMEDIATE``, no write lock) is used.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import StreamingResponse

from cloudadmin.web.app_state import app_state

# Rows per chunk of the body (a few hundred kilobytes: few sends, flat memory).
CHUNK_ROWS = 2_000
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Rows = Callable[[AsyncConnection], AsyncIterator[Sequence[Any]]]
# The file's lines written elsewhere (by the database), a batch of them at a time.
Chunks = Callable[[AsyncConnection], AsyncIterator[str]]


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


def _header(header: Sequence[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(header)
    return buffer.getvalue()


async def _rows_body(request: Request, header: Sequence[str], rows: Rows) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    count = 0
    async with _connection(request, cursor=False) as conn:
        async for row in rows(conn):
            writer.writerow([cell(value) for value in row])
            count += 1
            if count % CHUNK_ROWS == 0:
                yield buffer.getvalue().encode()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue().encode()


async def _text_body(
    request: Request, header: Sequence[str], chunks: Chunks, cursor: bool
) -> AsyncIterator[bytes]:
    yield _header(header).encode()
    async with _connection(request, cursor) as conn:
        async for chunk in chunks(conn):
            yield chunk.encode()


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
    return _response(_rows_body(request, header, rows), filename)


def csv_text_download(
    request: Request,
    filename: str,
    header: Sequence[str],
    chunks: Chunks,
    *,
    cursor: bool = False,
) -> StreamingResponse:
    """``chunks(conn)`` yields the file's lines already written as CSV (each ending in
    CRLF, a formula cell already guarded; a database can write them: billing/addendums/
    export.py), a batch at a time, after the header written here. With ``cursor``, the
    connection allows a server-side cursor (see the module's docstring)."""
    return _response(_text_body(request, header, chunks, cursor), filename)
