"""Queries of the addendum list: the page and its count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.util import ClauseAdapter

from cloudadmin.billing.addendums import items_json
from cloudadmin.billing.addendums.creation_days import DayRange
from cloudadmin.billing.addendums.filters import (
    CountsShape,
    Shape,
    Where,
    clauses,
    company_named,
    counts_clauses,
    in_list,
)
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.billing.addendums.tables import COUNTS, DAYS, TOTALS, A, C, addendums, clients
from cloudadmin.db import driver

# Order matters: service._out unpacks the row (with company_name last).
PAGE_COLUMNS = (
    A.id, A.client_id, A.status, A.active_start, A.active_end, A.created_at,
    A.currency_id, A.currency_char_code, A.currency_symbol, A.plan_id, A.plan_name,
    A.product_id, A.product_name, A.product_internal_name,
)  # fmt: skip


def dialect_of(conn: AsyncConnection) -> str:
    return conn.dialect.name


# Statements are built once per shape of the request (filters.Where) and ordering, and
# run on the driver connection (db/driver.py): the list's statements read columns, never
# ORM entities. Bounded: shapes are combinations of 29 filters.
def _page_source(shape: Shape, order: Order) -> tuple[Any, Any, tuple[Any, ...]]:
    """The page as a deferred join: the ids of the page first, from the filters and the
    order alone (often from an index only), then their rows and client names. Gives the
    page's row (an alias of the addendums), the join, and the order on that row.

    Joined before the LIMIT, the database joined every matching row, and every row an
    OFFSET skipped, to its client: 15.6 ms for a creation range of 14,154 rows (a hash
    of all clients) and 58 ms for offset 100,000, against 2.8 and 8.9 ms this way
    (EXPLAIN ANALYZE, 1M rows; docs/billing.md, "Reading a page").
    """
    ids = (
        select(A.id)
        .where(*clauses(shape))
        .order_by(*order)
        .limit(bindparam("page_limit", type_=Integer))
        .offset(bindparam("page_offset", type_=Integer))
        .subquery("page_ids")
    )
    row = addendums.alias("page_row")
    to_row = ClauseAdapter(row)
    joined = ids.join(row, row.c.id == ids.c.id).outerjoin(clients, C.id == row.c.client_id)
    return row, joined, tuple(to_row.traverse(clause) for clause in order)


# Statements are built once per shape of the request (filters.Where) and ordering, and
# run on the driver connection (db/driver.py): the list's statements read columns, never
# ORM entities. Bounded: shapes are combinations of 29 filters.
@lru_cache(maxsize=512)
def _page_statement(shape: Shape, order: Order) -> driver.Static:
    """The page's rows (PAGE_COLUMNS, then the client's name), in order."""
    row, joined, row_order = _page_source(shape, order)
    columns = (row.c[column.key] for column in PAGE_COLUMNS)
    return driver.Static(select(*columns, C.company_name).select_from(joined).order_by(*row_order))


@lru_cache(maxsize=512)
def _page_text_statement(shape: Shape, order: Order) -> driver.Static:
    """The page's items as JSON text, in order (items_json): one row, one value."""
    row, joined, row_order = _page_source(shape, order)
    return driver.Static(
        select(items_json.items(row, C.company_name, row_order)).select_from(joined)
    )


def writes_items(conn: AsyncConnection) -> bool:
    """Whether the database writes the page's items itself (items_json: PostgreSQL)."""
    return conn.dialect.name == "postgresql"


async def page(
    conn: AsyncConnection, where: Where, order: Order, *, limit: int, offset: int
) -> Sequence[Any]:
    """``order`` is a tuple from ordering.order_by or ordering.by_id_expression (the same
    object for the same order, so that it can key the statement)."""
    params = {**where.params, "page_limit": limit, "page_offset": offset}
    return await driver.fetch(conn, _page_statement(where.shape, order), params)


async def page_text(
    conn: AsyncConnection, where: Where, order: Order, *, limit: int, offset: int
) -> bytes:
    """The page's items as the inside of a JSON array, UTF-8 (writes_items); as page()."""
    params = {**where.params, "page_limit": limit, "page_offset": offset}
    return bytes(await driver.scalar(conn, _page_text_statement(where.shape, order), params))


# The count read alongside the page takes its values under this prefix: its parameters
# and the page's share names with other values (``client_id`` is a list for a count of
# the counters, one number for the page's filter).
TOTAL_PREFIX = "total_"


def _prefixed(stmt: Select[Any], prefix: str) -> Select[Any]:
    """``stmt`` with each named bind parameter renamed ``prefix + name`` (anonymous ones,
    such as a literal's, stay as they are: they cannot clash)."""

    def rename(element: Any, **kw: Any) -> Any:
        if isinstance(element, BindParameter) and not element.unique:
            return bindparam(
                prefix + element.key,
                element.value,
                type_=element.type,
                expanding=element.expanding,
                required=element.required,
            )
        return None

    return cast(Select[Any], visitors.replacement_traverse(stmt, {}, rename))


def _with_total(page_stmt: driver.Static, count: driver.Static) -> driver.Static:
    """The page with the count as one more column, in one round trip: a scalar subquery
    that does not depend on the row, which the database computes once per statement."""
    total = _prefixed(cast(Select[Any], count.stmt), TOTAL_PREFIX).scalar_subquery()
    return driver.Static(cast(Select[Any], page_stmt.stmt).add_columns(total.label("total")))


@lru_cache(maxsize=512)
def _counted_page_statement(shape: Shape, order: Order, count: driver.Static) -> driver.Static:
    return _with_total(_page_statement(shape, order), count)


@lru_cache(maxsize=512)
def _counted_page_text_statement(shape: Shape, order: Order, count: driver.Static) -> driver.Static:
    return _with_total(_page_text_statement(shape, order), count)


def _counted_params(
    where: Where, count_params: Mapping[str, Any], limit: int, offset: int
) -> dict[str, Any]:
    return {
        **where.params,
        "page_limit": limit,
        "page_offset": offset,
        **{TOTAL_PREFIX + name: value for name, value in count_params.items()},
    }


async def counted_page(
    conn: AsyncConnection,
    where: Where,
    order: Order,
    count: driver.Static,
    count_params: Mapping[str, Any],
    *,
    limit: int,
    offset: int,
) -> tuple[int, Sequence[Any]] | None:
    """The page and the count (``count``: a one-value statement of count_statement or
    counts_statement) read together; None when the page is empty, which says nothing
    of the count. Rows are as page() gives them."""
    params = _counted_params(where, count_params, limit, offset)
    rows = await driver.fetch(conn, _counted_page_statement(where.shape, order, count), params)
    if not rows:
        return None
    return int(rows[0][-1]), [row[:-1] for row in rows]


async def counted_page_text(
    conn: AsyncConnection,
    where: Where,
    order: Order,
    count: driver.Static,
    count_params: Mapping[str, Any],
    *,
    limit: int,
    offset: int,
) -> tuple[int, bytes]:
    """The count and the page's items as page_text() writes them, read together: an
    aggregate, so one row even for an empty page."""
    params = _counted_params(where, count_params, limit, offset)
    statement = _counted_page_text_statement(where.shape, order, count)
    ((text, total),) = await driver.fetch(conn, statement, params)
    return int(total), bytes(text)


@lru_cache(maxsize=512)
def count_statement(shape: Shape) -> driver.Static:
    return driver.Static(select(func.count()).select_from(addendums).where(*clauses(shape)))


async def count_rows(conn: AsyncConnection, where: Where) -> int:
    return int(await driver.scalar(conn, count_statement(where.shape), where.params))


@lru_cache(maxsize=8)
def _totals_statement(dialect: str, by_status: bool, by_product: bool) -> driver.Static:
    # Built once per dialect and filter pair: the unfiltered operator's count runs on
    # most list requests.
    stmt = select(func.coalesce(func.sum(TOTALS.n), 0))
    if by_status:
        stmt = stmt.where(in_list(TOTALS.status, "statuses", dialect))
    if by_product:
        stmt = stmt.where(in_list(TOTALS.product_id, "products", dialect))
    return driver.Static(stmt)


async def sum_totals(
    conn: AsyncConnection, *, statuses: Sequence[str] | None, products: Sequence[int] | None
) -> int:
    """Addendums with one of ``statuses`` and ``products`` (None: any), from the totals."""
    stmt = _totals_statement(dialect_of(conn), statuses is not None, products is not None)
    params = {"statuses": list(statuses or ()), "products": list(products or ())}
    return int(await driver.scalar(conn, stmt, params))


async def table_rows(conn: AsyncConnection) -> int:
    """All addendums, from the counters."""
    return await sum_totals(conn, statuses=None, products=None)


def _per_client_sums(shape: CountsShape) -> tuple[Any, Any]:
    """The named clients (an alias of ``clients``) and the sum of each one's counter
    rows.

    A company search sums the counter rows of each named client in turn: a correlated
    subquery is an index range of the counters' key per client whatever the planner
    estimates (written as ``client_id IN (named clients)``, PostgreSQL hashed the
    clients and read all 495,000 counter rows when they were not in key order: 65 ms
    against 2 ms). An alias, so that the sum embedded in a page statement that joins
    ``clients`` (counted_page) cannot correlate to that join's clients."""
    named = clients.alias("named_clients")
    per_client = (
        select(func.sum(COUNTS.n))
        .where(COUNTS.client_id == named.c.id, *counts_clauses(shape))
        .correlate(named)
        .scalar_subquery()
    )
    return named, per_client


@lru_cache(maxsize=64)
def counts_statement(shape: CountsShape) -> driver.Static:
    if not shape.company:
        rows_of = counts_clauses(shape)
        return driver.Static(select(func.coalesce(func.sum(COUNTS.n), 0)).where(*rows_of))
    named, per_client = _per_client_sums(shape)
    return driver.Static(
        select(func.coalesce(func.sum(per_client), 0))
        .select_from(named)
        .where(company_named(named.c))
    )


@lru_cache(maxsize=64)
def naming_counts_statement(shape: CountsShape) -> driver.Static:
    """A company search's count and the ids of the clients it names (PostgreSQL)."""
    named, per_client = _per_client_sums(shape)
    return driver.Static(
        select(func.coalesce(func.sum(per_client), 0), func.array_agg(named.c.id))
        .select_from(named)
        .where(company_named(named.c))
    )


async def sum_counts_naming(
    conn: AsyncConnection, shape: CountsShape, params: dict[str, Any]
) -> tuple[int, list[int]]:
    """Addendums counted by ``addendum_counts`` rows for a company search, and the
    clients the search names (PostgreSQL)."""
    ((total, named),) = await driver.fetch(conn, naming_counts_statement(shape), params)
    return int(total), list(named or ())


async def sum_counts(conn: AsyncConnection, shape: CountsShape, params: dict[str, Any]) -> int:
    """Addendums counted by ``addendum_counts`` rows (filters.counts_where)."""
    return int(await driver.scalar(conn, counts_statement(shape), params))


def _days_statement() -> driver.Static:
    def edge(lower: Any, upper: Any) -> Any:
        return select(func.count()).select_from(addendums).where(lower, upper).scalar_subquery()

    head = edge(A.created_at >= bindparam("head_from"), A.created_at < bindparam("head_to"))
    tail = edge(A.created_at >= bindparam("tail_from"), A.created_at <= bindparam("tail_last"))
    return driver.Static(
        select(
            func.coalesce(func.sum(DAYS.n), 0) - head - tail,
            func.min(DAYS.min_id),
            func.max(DAYS.max_id),
        ).where(DAYS.day >= bindparam("first_day"), DAYS.day <= bindparam("last_day"))
    )


_DAYS = _days_statement()


async def count_days(conn: AsyncConnection, days: DayRange) -> tuple[int, int | None, int | None]:
    """Addendums created in ``days`` (creation_days), and bounds of their ids (None when
    no addendum was ever counted on those days)."""
    rows = await driver.fetch(conn, _DAYS, days._asdict())
    total, low, high = rows[0]
    return int(total), low, high
