"""The statements of the addendum list, built once per shape of a request (filters.Shape,
counter_filters.CounterShape) and ordering, with named parameters: a request only
supplies its values (repository.py runs them on the driver connection, db/driver.py).
The list's statements read columns, never ORM entities. Bounded: shapes are
combinations of 29 filters."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.util import ClauseAdapter

from cloudadmin.billing.addendums import items_json
from cloudadmin.billing.addendums.counter_filters import (
    CounterShape,
    counter_clauses,
    counter_table,
)
from cloudadmin.billing.addendums.fields import PAGE_FIELDS
from cloudadmin.billing.addendums.filter_sql import company_named
from cloudadmin.billing.addendums.filters import Shape, clauses
from cloudadmin.billing.addendums.ordering import Order
from cloudadmin.billing.addendums.tables import COUNTS, DAYS, A, C, addendums, clients
from cloudadmin.db import driver

# The wire's stored fields in the table's order (fields.PAGE_FIELDS): service.py shapes
# the row by position, with the client's name last.
PAGE_COLUMNS = tuple(A[field.column] for field in PAGE_FIELDS if field.column)


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


@lru_cache(maxsize=512)
def page_statement(shape: Shape, order: Order) -> driver.Static:
    """The page's rows (PAGE_COLUMNS, then the client's name), in order."""
    row, joined, row_order = _page_source(shape, order)
    columns = (row.c[column.key] for column in PAGE_COLUMNS)
    return driver.Static(select(*columns, C.company_name).select_from(joined).order_by(*row_order))


@lru_cache(maxsize=512)
def page_text_statement(shape: Shape, order: Order) -> driver.Static:
    """The page's items as JSON text, in order (items_json): one row, one value."""
    row, joined, row_order = _page_source(shape, order)
    return driver.Static(
        select(items_json.items(row, C.company_name, row_order)).select_from(joined)
    )


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
def counted_page_statement(shape: Shape, order: Order, count: driver.Static) -> driver.Static:
    return _with_total(page_statement(shape, order), count)


@lru_cache(maxsize=512)
def counted_page_text_statement(shape: Shape, order: Order, count: driver.Static) -> driver.Static:
    return _with_total(page_text_statement(shape, order), count)


@lru_cache(maxsize=512)
def count_statement(shape: Shape) -> driver.Static:
    return driver.Static(select(func.count()).select_from(addendums).where(*clauses(shape)))


def _per_client_sums(shape: CounterShape) -> tuple[Any, Any]:
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
        .where(COUNTS.client_id == named.c.id, *counter_clauses(shape))
        .correlate(named)
        .scalar_subquery()
    )
    return named, per_client


@lru_cache(maxsize=64)
def counter_statement(shape: CounterShape) -> driver.Static:
    """The sum of the counter rows of ``shape`` (counter_filters.counter_where)."""
    if not shape.company:
        table = counter_table(shape)
        rows_of = counter_clauses(shape)
        return driver.Static(select(func.coalesce(func.sum(table.n), 0)).where(*rows_of))
    named, per_client = _per_client_sums(shape)
    return driver.Static(
        select(func.coalesce(func.sum(per_client), 0))
        .select_from(named)
        .where(company_named(named.c))
    )


@lru_cache(maxsize=64)
def naming_statement(shape: CounterShape) -> driver.Static:
    """A company search's count and the ids of the clients it names (PostgreSQL)."""
    named, per_client = _per_client_sums(shape)
    return driver.Static(
        select(func.coalesce(func.sum(per_client), 0), func.array_agg(named.c.id))
        .select_from(named)
        .where(company_named(named.c))
    )


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


DAYS_STATEMENT = _days_statement()
