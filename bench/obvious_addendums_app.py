"""GET /billing/org/v1/addendums written the obvious way: a bare ASGI app on asyncpg.

The peer the service is measured against (bench/addendums.py): what a person would
write for this endpoint without the project's plans (no counter tables, no id-range
walks, no deferred join, no statement shapes). Per request:

1. one API-key lookup: the key, its user and the user's account by the key id, the
   secret compared with its stored SHA-256 (kit/crypto.py); operators see every
   addendum, a reseller its own and its clients', any other account those it holds or
   pays for (docs/billing.md, "Who sees what");
2. an exact ``SELECT count(*)`` with only the joins its filters need (the clients
   table for ``company_name`` only);
3. the page joined to the client's company name, ordered by the requested fields then
   ``id``, with ``LIMIT``/``OFFSET``.

It answers the service's JSON shape, ``{count, next, previous, results}``, for the
parameters of docs/billing.md (name searches on the folded copies the tables keep, so
that matches equal the service's), and writes no activity-log row unless
OBVIOUS_ADDENDUMS_LOG=1: then one INSERT into ``activity_log``, committed on its own
(asyncpg autocommit), per request, to price that write. Errors are terse (400 with
the parameter's name); validation is not what is measured. PostgreSQL only.

    OBVIOUS_ADDENDUMS_DATABASE_URL=postgresql://postgres@127.0.0.1/db \\
        .venv/bin/python -m uvicorn --app-dir bench obvious_addendums_app:app --workers 1
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import unicodedata
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

PATH = "/billing/org/v1/addendums"
POOL_SIZE = int(os.environ.get("OBVIOUS_ADDENDUMS_POOL_SIZE", "10"))
LOG = os.environ.get("OBVIOUS_ADDENDUMS_LOG", "0") == "1"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

KEY_LOOKUP = """
SELECT k.secret_hash, k.revoked, k.expires_at, u.id, u.email, u.superuser, u.is_active,
       u.deleted, c.id, c.client_type, c.deleted
FROM api_keys k JOIN users u ON u.id = k.user_id JOIN clients c ON c.id = u.client_id
WHERE k.id = $1
"""

PAGE_COLUMNS = """a.id, a.client_id, c.company_name, a.status, a.active_start, a.active_end,
a.created_at, a.currency_id, a.currency_char_code, a.currency_symbol, a.plan_id,
a.plan_name, a.product_id, a.product_name, a.product_internal_name"""

LOG_INSERT = """
INSERT INTO activity_log (actions, data, user_email, client_id, token_id, user_id,
    requested_at, path, remote_ip_address, host, method, query_params, status_code,
    reverted, request_id)
VALUES ('view', '', $1, $2, $3, $4, $5, $6, $7, $8, 'GET', $9, 200, false, '')
"""

ORDER_COLUMNS = {
    "created_at": ["a.created_at"],
    "active_range_start": ["a.active_start"],
    "active_range_end": ["a.active_end"],
    "id": ["a.id"],
    "client_id": ["a.client_id"],
    "plan_name": ['a.plan_name_folded COLLATE "C"', 'a.plan_name COLLATE "C"'],
    "plan_id": ["a.plan_id"],
    "product_name": ['a.product_name_folded COLLATE "C"', 'a.product_name COLLATE "C"'],
    "product_id": ["a.product_id"],
}
INT_LISTS = ("client_id", "provider_id", "plan_id", "product_id", "currency_id")
NULLABLE_LISTS = ("payer_id", "reseller_id")
TEXT_LISTS = {
    "status": "a.status",
    "currency_char_code": "a.currency_char_code",
    "product_internal_name": "a.product_internal_name",
}
INSTANTS = {
    "active_at": "a.active_start <= {} AND (a.active_end IS NULL OR a.active_end > {})",
    "not_active_at": "(a.active_start > {} OR a.active_end <= {})",
    "active_after": "(a.active_end IS NULL OR (a.active_end > {} AND a.active_end > "
    "a.active_start))",
    "active_before": "a.active_start < {} AND (a.active_end IS NULL OR a.active_end > "
    "a.active_start)",
    "active_start_from": "a.active_start >= {}",
    "active_start_to": "a.active_start <= {}",
    "active_end_from": "(a.active_end IS NULL OR a.active_end >= {})",
    "active_end_to": "a.active_end <= {}",
    "created_after": "a.created_at > {}",
    "created_before": "a.created_at < {}",
}
NAMES = {
    "plan_name": "a.plan_name_folded",
    "product_name": "a.product_name_folded",
    "company_name": "c.company_name_folded",
}
OTHER = {"id", "addendum_id", "created_on", "limit", "offset", "ordering"}
KNOWN = {*INT_LISTS, *NULLABLE_LISTS, *TEXT_LISTS, *INSTANTS, *NAMES, *OTHER}


class BadRequest(Exception):
    pass


def fold(text: str) -> str:
    """Caseless form (NFD, casefold, NFC), as the tables' *_folded columns hold it."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def instant(name: str, raw: str) -> datetime:
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest(name) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def integer(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(name) from None


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def status_at(status: str, start: datetime, end: datetime | None, at: datetime) -> str:
    if at < start:
        return "upcoming"
    if end is not None and at >= end:
        return "stopped"
    return "active" if status == "upcoming" else status


class Query:
    """The WHERE clause, its arguments, the ORDER BY, limit and offset of one request."""

    def __init__(self, params: list[tuple[str, str]], caller: tuple[Any, ...]) -> None:
        self.args: list[Any] = []
        self.where: list[str] = []
        self.join_clients = False
        self.limit, self.offset = 25, 0
        self.active_at: datetime | None = None
        values: dict[str, list[str]] = {}
        for name, value in params:
            if name not in KNOWN:
                raise BadRequest(name)
            values.setdefault(name, []).append(value)
        self._scope(caller)
        for name, raw in values.items():
            self._filter(name, raw)
        self.order = self._order(values.get("ordering", []))

    def arg(self, value: Any) -> str:
        self.args.append(value)
        return f"${len(self.args)}"

    def _scope(self, caller: tuple[Any, ...]) -> None:
        superuser, account_id, account_type = caller
        if superuser:
            return
        p = self.arg(account_id)
        if account_type == "reseller":
            self.where.append(
                f"(a.reseller_id = {p} OR a.client_id IN "
                f"(SELECT id FROM clients WHERE reseller_id = {p}))"
            )
        else:
            self.where.append(f"(a.client_id = {p} OR a.payer_id = {p})")

    def _filter(self, name: str, raw: list[str]) -> None:
        if name in INT_LISTS or name == "addendum_id":
            column = "a.id" if name == "addendum_id" else f"a.{name}"
            ids = [integer(name, v) for v in raw]
            if len(ids) == 1:
                self.where.append(f"{column} = {self.arg(ids[0])}")
            else:
                self.where.append(f"{column} = ANY({self.arg(ids)})")
        elif name in NULLABLE_LISTS:
            ids = [integer(name, v) for v in raw if v != "null"]
            parts = [f"a.{name} = ANY({self.arg(ids)})"] if ids else []
            if "null" in raw:
                parts.append(f"a.{name} IS NULL")
            self.where.append("(" + " OR ".join(parts) + ")")
        elif name in TEXT_LISTS:
            if len(raw) == 1:
                self.where.append(f"{TEXT_LISTS[name]} = {self.arg(raw[0])}")
            else:
                self.where.append(f"{TEXT_LISTS[name]} = ANY({self.arg(raw)})")
        elif name in INSTANTS:
            at = instant(name, raw[-1])
            if name == "active_at":
                self.active_at = at
            p = self.arg(at)
            self.where.append(INSTANTS[name].format(p, p))
        elif name in NAMES:
            if name == "company_name":
                self.join_clients = True
            escaped = fold(raw[-1]).replace("/", "//").replace("%", "/%").replace("_", "/_")
            self.where.append(f"{NAMES[name]} LIKE {self.arg(f'%{escaped}%')} ESCAPE '/'")
        elif name == "id":
            self.where.append(f"a.id = {self.arg(integer(name, raw[-1]))}")
        elif name == "created_on":
            try:
                day = date.fromisoformat(raw[-1])
            except ValueError:
                raise BadRequest(name) from None
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            self.where.append(
                f"a.created_at >= {self.arg(start)} AND "
                f"a.created_at < {self.arg(start + timedelta(days=1))}"
            )
        elif name == "limit":
            self.limit = integer(name, raw[-1])
            if not 1 <= self.limit <= 100:
                raise BadRequest(name)
        elif name == "offset":
            self.offset = integer(name, raw[-1])
            if self.offset < 0:
                raise BadRequest(name)

    @staticmethod
    def _order(raw: list[str]) -> str:
        seen: set[str] = set()
        clauses: list[str] = []
        for part in ",".join(raw).split(","):
            field = part.strip()
            if not field:
                continue
            name = field.lstrip("-")
            if name not in ORDER_COLUMNS:
                raise BadRequest("ordering")
            if name in seen:
                continue
            seen.add(name)
            descending = field.startswith("-")
            for column in ORDER_COLUMNS[name]:
                clause = column + (" DESC" if descending else "")
                if name == "active_range_end":  # no end = never ends: +infinity
                    clause += " NULLS FIRST" if descending else " NULLS LAST"
                clauses.append(clause)
        if "id" not in seen:
            clauses.append("a.id")
        return ", ".join(clauses)

    def count_sql(self) -> str:
        join = " JOIN clients c ON c.id = a.client_id" if self.join_clients else ""
        return f"SELECT count(*) FROM addendums a{join}{self._where_sql()}"

    def page_sql(self) -> str:
        n = len(self.args)
        return (
            f"SELECT {PAGE_COLUMNS} FROM addendums a JOIN clients c ON c.id = a.client_id"
            f"{self._where_sql()} ORDER BY {self.order} LIMIT ${n + 1} OFFSET ${n + 2}"
        )

    def _where_sql(self) -> str:
        return " WHERE " + " AND ".join(self.where) if self.where else ""


def item(row: Any, active_at: datetime | None) -> dict[str, Any]:
    (
        id_,
        client_id,
        company_name,
        status,
        start,
        end,
        created_at,
        currency_id,
        char_code,
        symbol,
        plan_id,
        plan_name,
        product_id,
        product_name,
        internal_name,
    ) = row
    out = {
        "id": id_,
        "client_id": client_id,
        "client": {"id": client_id, "company_name": company_name or ""},
        "status": status,
        "active_range": {"start": iso(start), "end": iso(end)},
        "created_at": iso(created_at),
        "currency": {"id": currency_id, "char_code": char_code, "symbol": symbol},
        "plan": {"id": plan_id, "name": plan_name},
        "product": {"id": product_id, "name": product_name, "internal_name": internal_name},
    }
    if active_at is not None:
        out["status_at_active_at"] = status_at(status, start, end, active_at)
    return out


def link(base: str, params: list[tuple[str, str]], limit: int, offset: int | None) -> str:
    kept = [(k, v) for k, v in params if k not in ("limit", "offset")]
    kept.append(("limit", str(limit)))
    if offset is not None:
        kept.append(("offset", str(offset)))
    return f"{base}?{urlencode(kept)}"


class App:
    def __init__(self) -> None:
        self.url = os.environ["OBVIOUS_ADDENDUMS_DATABASE_URL"].replace("+asyncpg", "")
        self.pool: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    import asyncpg

                    self.pool = await asyncpg.create_pool(
                        self.url, min_size=POOL_SIZE, max_size=POOL_SIZE
                    )
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.pool.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["path"] == "/healthz":
            await answer(send, 200, {"status": "ok"})
            return
        if scope["path"] != PATH or scope["method"] != "GET":
            await answer(send, 404, {"detail": "Not found."})
            return
        headers = dict(scope["headers"])
        async with self.pool.acquire() as conn:
            try:
                status, body = await self.list(conn, scope, headers)
            except BadRequest as exc:
                status, body = 400, {"errors": {str(exc): ["Invalid value."]}}
        await answer(send, status, body)

    async def list(
        self, conn: Any, scope: Scope, headers: dict[bytes, bytes]
    ) -> tuple[int, dict[str, Any]]:
        scheme, _, token = headers.get(b"authorization", b"").decode().partition(" ")
        key_id, _, secret = token.partition("_")
        if scheme.lower() != "apikey" or not key_id.isdigit():
            return 401, {"detail": "Given token not valid."}
        row = await conn.fetchrow(KEY_LOOKUP, int(key_id))
        expected = hashlib.sha256(f"{key_id}:{secret}".encode()).hexdigest()
        if (
            row is None
            or not hmac.compare_digest(expected, row[0])
            or row[1]
            or (row[2] is not None and row[2] <= datetime.now(UTC))
            or not row[6]
            or row[7]
            or row[10]
        ):
            return 401, {"detail": "Given token not valid."}
        query_string = scope["query_string"].decode()
        params = parse_qsl(query_string, keep_blank_values=True)
        q = Query(params, (row[5], row[8], row[9]))
        count = await conn.fetchval(q.count_sql(), *q.args)
        rows = await conn.fetch(q.page_sql(), *q.args, q.limit, q.offset)
        host = headers.get(b"host", b"localhost").decode()
        base = f"{scope.get('scheme', 'http')}://{host}{PATH}"
        nxt = (
            link(base, params, q.limit, q.offset + q.limit) if q.offset + q.limit < count else None
        )
        prev = None
        if q.offset > 0:
            back = max(q.offset - q.limit, 0)
            prev = link(base, params, q.limit, back or None)
        if LOG:
            client = scope.get("client") or ("", 0)
            await conn.execute(
                LOG_INSERT,
                row[4],
                row[8],
                int(key_id),
                row[3],
                datetime.now(UTC),
                PATH,
                client[0],
                host,
                query_string,
            )
        return 200, {
            "count": count,
            "next": nxt,
            "previous": prev,
            "results": [item(r, q.active_at) for r in rows],
        }


async def answer(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


app = App()
