"""The data-path ceiling of GET /billing/org/v1/addendums: a bare ASGI app.

No framework, no ORM, no authentication: for a request whose query string is one the
benchmark recorded, it issues exactly the statements the service issued for it (the
count, then the page; captured as sent to the driver by bench/addendums.py and
stored in a pickle) with bare asyncpg (PostgreSQL) or sqlite3 in a thread (SQLite),
and answers the rows as JSON. ``/healthz`` answers without touching the database.

RAW_ADDENDUMS_MODE=read (the default) issues the count and the page only; =all replays
every statement of the service's request as the service runs a read: the API key
lookup, the count, the page and the activity log INSERT, each committed on its own
(no BEGIN/COMMIT; src/cloudadmin/db/engine.py, create_read_sessionmaker); =nolog all
of them but the writes (the log INSERT): ``all`` against ``nolog`` prices the log row.

    RAW_ADDENDUMS_DATABASE_URL=postgresql://... RAW_ADDENDUMS_SQL=/tmp/sql.pickle \\
        .venv/bin/python -m uvicorn --app-dir bench raw_addendums_app:app --workers 1
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from typing import Any

POOL_SIZE = int(os.environ.get("RAW_ADDENDUMS_POOL_SIZE", "10"))
MODE = os.environ.get("RAW_ADDENDUMS_MODE", "read")
# A recorded statement: (kind, sql, parameters); kind is one of "begin", "write",
# "count", "page", "other" (see bench/addendums.py, classify()).
Statement = tuple[str, str, Any]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


class Postgres:
    def __init__(self, url: str) -> None:
        self.url = url.replace("+asyncpg", "")
        self.pool: Any = None

    async def start(self) -> None:
        import asyncpg

        self.pool = await asyncpg.create_pool(self.url, min_size=POOL_SIZE, max_size=POOL_SIZE)

    async def run(self, statements: list[Statement]) -> list[list[dict[str, Any]]]:
        async with self.pool.acquire() as conn:
            return [
                [dict(r) for r in await conn.fetch(sql, *params)] for _, sql, params in statements
            ]


class Sqlite:
    def __init__(self, url: str) -> None:
        self.path = url.split(":///", 1)[1]
        self.free: asyncio.Queue[sqlite3.Connection] = asyncio.Queue()

    async def start(self) -> None:
        for _ in range(POOL_SIZE):
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=10000")
            self.free.put_nowait(conn)

    @staticmethod
    def _run(conn: sqlite3.Connection, statements: list[Statement]) -> list[list[dict[str, Any]]]:
        out = []
        for _, sql, params in statements:  # autocommit: each statement on its own
            cur = conn.execute(sql, params)
            names = [d[0] for d in cur.description or ()]
            out.append([dict(zip(names, row, strict=True)) for row in cur.fetchall()])
        return out

    async def run(self, statements: list[Statement]) -> list[list[dict[str, Any]]]:
        conn = await self.free.get()
        try:
            return await asyncio.to_thread(self._run, conn, statements)
        finally:
            self.free.put_nowait(conn)


class App:
    def __init__(self) -> None:
        url = os.environ["RAW_ADDENDUMS_DATABASE_URL"]
        with open(os.environ["RAW_ADDENDUMS_SQL"], "rb") as f:
            recorded: dict[str, list[Statement]] = pickle.load(f)
        keep = {"read": {"count", "page"}, "nolog": {"count", "page", "other"}}.get(
            MODE, {"count", "page", "write", "other"}
        )
        self.statements = {q: [s for s in stmts if s[0] in keep] for q, stmts in recorded.items()}
        self.db: Postgres | Sqlite = Sqlite(url) if url.startswith("sqlite") else Postgres(url)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await self.db.start()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["path"] == "/healthz":
            await self._answer(send, 200, b'{"status":"ok"}')
            return
        statements = self.statements.get(scope["query_string"].decode())
        if statements is None:
            await self._answer(send, 404, b'{"detail":"query not recorded"}')
            return
        results = await self.db.run(statements)
        count, page_rows = 0, []
        for (kind, _, _), rows in zip(statements, results, strict=True):
            if kind == "count" and rows:
                count = next(iter(rows[0].values()))
            elif kind == "page":
                page_rows = rows
        body = json.dumps(
            {"count": count, "results": page_rows}, default=_default, ensure_ascii=False
        ).encode()
        await self._answer(send, 200, body)

    @staticmethod
    async def _answer(send: Send, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


app = App()
