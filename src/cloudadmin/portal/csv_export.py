"""A CSV download, streamed: rows are read from the database as they are written out,
on a read connection of their own (the page's transaction has ended by the time the
body is sent), in chunks, so memory stays flat whatever the number of rows.

A cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) is written with a leading apostrophe (OWASP's "CSV
injection"); numbers are written as they are.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import StreamingResponse

from cloudadmin.auth.app_state import app_state

# Rows per chunk of the body.
CHUNK_ROWS = 1_000
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Rows = Callable[[AsyncConnection], AsyncIterator[Sequence[Any]]]


def cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


async def _body(request: Request, header: Sequence[str], rows: Rows) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    count = 0
    async with app_state(request.app).read_engine.connect() as conn:
        async for row in rows(conn):
            writer.writerow([cell(value) for value in row])
            count += 1
            if count % CHUNK_ROWS == 0:
                yield buffer.getvalue().encode()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue().encode()


def csv_download(
    request: Request, filename: str, header: Sequence[str], rows: Rows
) -> StreamingResponse:
    """``rows(conn)`` yields the rows, on a read connection of the download's own."""
    disposition = f"attachment; filename*=UTF-8''{quote(filename)}"
    return StreamingResponse(
        _body(request, header, rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )
