"""The documented semantics of every filter and ordering field, as SQL (docs/billing.md).

The active period of an addendum is the half-open range [start, end): it begins at
``start`` and ends just before ``end``; a null ``end`` means it never ends (+infinity,
everywhere: filters, ordering, status_at_active_at).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    any_,
    bindparam,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import tenant_clause
from cloudadmin.billing.addendums.creation_days import utc_day
from cloudadmin.billing.addendums.schemas import PRODUCT_IDS, AddendumQuery
from cloudadmin.billing.addendums.tables import COUNTS, A
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.ordering import parse_ordering


class Where(NamedTuple):
    """The scope and filters of a request as a statement shape and its values.

    ``shape`` says which conditions there are and nothing about their values, so a
    statement is built once per shape (``clauses``) with named parameters, and every
    request only supplies ``params``: building and cache-keying a SQLAlchemy statement
    on every request cost about a seventh of the list's CPU (docs/billing.md).
    """

    shape: tuple[Any, ...]
    params: dict[str, Any]


def where(
    q: AddendumQuery, caller: Caller, dialect: str, *,
    company_ids: Sequence[int] | None = None, walk: bool = False,
    id_range: tuple[int, int] | None = None,
) -> Where:
    """What ``caller`` may see of the addendums ``q`` filters for.

    ``company_ids``: the clients whose name matches ``q.company_name`` (repository).
    ``walk``: see :func:`_scope`.
    ``id_range``: [low, high] known to hold every match's id (counting.Counted), added
    as a condition so that a page in id order walks the primary key only there.
    """
    shape: list[Any] = [dialect, _scope_kind(caller, walk)]
    params: dict[str, Any] = {}
    if not caller.is_operator:
        params["scope_account"] = caller.account_id
    for name in _INSTANTS:
        value = getattr(q, name)
        if value is not None:
            shape.append(name)
            params[name] = value
    if q.created_on is not None:
        shape.append("created_on")
        params["created_on_from"], params["created_on_last"] = utc_day(q.created_on)
    for name in _LISTS:
        values = getattr(q, name)
        if values is not None:
            shape.append(name)
            params[name] = list(values)
    if q.id is not None:
        shape.append("id")
        params["id"] = q.id
    for name in _NULLABLE_LISTS:
        values = getattr(q, name)
        if values is not None:
            numbers = [v for v in values if v is not None]
            shape.append((name, bool(numbers), len(numbers) < len(values)))
            params[name] = numbers
    for name in _SEARCHES:
        value = getattr(q, name)
        if value is not None:
            shape.append(name)
            params[name] = _escape_like(fold(value))
    if company_ids is not None:
        shape.append(("company_name", bool(company_ids)))
        params["company_client_ids"] = _ids_value(company_ids, dialect)
    if id_range is not None:
        shape.append("id_range")
        params["id_low"], params["id_high"] = id_range
    return Where(tuple(shape), params)


def _scope_kind(caller: Caller, walk: bool) -> str:
    if caller.is_operator:
        return "operator"
    if caller.is_reseller:
        return "reseller-walk" if walk else "reseller"
    return "account"


@lru_cache(maxsize=512)
def clauses(shape: tuple[Any, ...]) -> tuple[ColumnElement[bool], ...]:
    """The WHERE conditions of a :class:`Where` shape, with named parameters."""
    dialect, scope_kind, *filters = shape
    out = _scope(scope_kind)
    for part in filters:
        if isinstance(part, tuple):
            name, *flags = part
            out += _VALUED_CLAUSES[name](dialect, *flags)
        elif part in _LISTS:
            out.append(in_list(A.id if part == "addendum_id" else getattr(A, part), part,
                               dialect))
        else:
            out += _CLAUSES[part]()
    return tuple(out)


def in_list(column: Any, name: str, dialect: str) -> ColumnElement[bool]:
    """``column IN (…)`` taking the whole list as the parameter ``name``.

    On PostgreSQL an array (``= ANY``): the SQL stays the same whatever the length of
    the list, so it is bound without rewriting the statement per request (db/driver.py;
    the rewrite of an expanding IN was a sixth of a filtered list's CPU). Arrays of
    text are ``VARCHAR[]``, never ``VARCHAR(n)[]``, whose cast would truncate a value.
    SQLite has no arrays: an expanding IN.
    """
    if dialect == "postgresql":
        item = String() if isinstance(column.type, String) else column.type
        return column == any_(bindparam(name, type_=ARRAY(item)))
    return column.in_(bindparam(name, expanding=True))


def _scope(kind: str) -> list[ColumnElement[bool]]:
    """What the caller may see (docs/access.md).

    ``reseller-walk``: the reseller's condition written so that no index can serve it
    (``col + 0``), for a reseller who sees a large share of the table: walking the
    primary key in id order then fills a page after a few hundred rows, where the
    indexes of the OR would fetch and sort everything the reseller sees.
    """
    if kind == "operator":
        return []
    account: Any = bindparam("scope_account")
    if kind == "reseller-walk":
        return [tenant_clause(account, [A.reseller_id + 0], clients=A.client_id + 0)]
    if kind == "reseller":
        # Rows of the reseller or of one of its clients.
        return [tenant_clause(account, [A.reseller_id], clients=A.client_id)]
    # An account's own addendums: as client or as payer.
    return [tenant_clause(account, [A.client_id, A.payer_id])]


def _p(name: str) -> Any:
    return bindparam(name)


def _end_open() -> ColumnElement[bool]:
    return A.active_end.is_(None)


# Conditions per filter, as documented in docs/billing.md; each takes its value from the
# parameter of the filter's own name.
_CLAUSES: dict[str, Callable[[], list[ColumnElement[bool]]]] = {
    # start <= t < end
    "active_at": lambda: [A.active_start <= _p("active_at"),
                          or_(_end_open(), A.active_end > _p("active_at"))],
    "not_active_at": lambda: [or_(A.active_start > _p("not_active_at"),
                                  and_(A.active_end.is_not(None),
                                       A.active_end <= _p("not_active_at")))],
    # active at some instant later than t (and the period is not empty)
    "active_after": lambda: [or_(_end_open(), and_(A.active_end > _p("active_after"),
                                                   A.active_end > A.active_start))],
    # active at some instant earlier than t
    "active_before": lambda: [A.active_start < _p("active_before"),
                              or_(_end_open(), A.active_end > A.active_start)],
    "active_start_from": lambda: [A.active_start >= _p("active_start_from")],
    "active_start_to": lambda: [A.active_start <= _p("active_start_to")],
    # an open end is later than any instant
    "active_end_from": lambda: [or_(_end_open(), A.active_end >= _p("active_end_from"))],
    "active_end_to": lambda: [and_(A.active_end.is_not(None),
                                   A.active_end <= _p("active_end_to"))],
    "created_after": lambda: [A.created_at > _p("created_after")],
    "created_before": lambda: [A.created_at < _p("created_before")],
    "created_on": lambda: [A.created_at >= _p("created_on_from"),
                           A.created_at <= _p("created_on_last")],
    "id": lambda: [A.id == _p("id")],
    "id_range": lambda: [A.id >= _p("id_low"), A.id <= _p("id_high")],
    "plan_name": lambda: [A.plan_name_folded.contains(_p("plan_name"), escape=_LIKE_ESCAPE)],
    "product_name": lambda: [A.product_name_folded.contains(_p("product_name"),
                                                            escape=_LIKE_ESCAPE)],
}
_INSTANTS = ("active_at", "not_active_at", "active_after", "active_before",
             "active_start_from", "active_start_to", "active_end_from", "active_end_to",
             "created_after", "created_before")
_LISTS = ("addendum_id", "client_id", "provider_id", "plan_id", "product_id", "currency_id",
          "currency_char_code", "product_internal_name", "status")
_NULLABLE_LISTS = ("payer_id", "reseller_id")
_SEARCHES = ("plan_name", "product_name")


def _nullable_in(name: str) -> Callable[[str, bool, bool], list[ColumnElement[bool]]]:
    def build(dialect: str, numbers: bool, null: bool) -> list[ColumnElement[bool]]:
        column = getattr(A, name)
        parts: list[ColumnElement[bool]] = []
        if numbers:
            parts.append(in_list(column, name, dialect))
        if null:
            parts.append(column.is_(None))
        return [or_(*parts)]

    return build


def _company(dialect: str, any_ids: bool) -> list[ColumnElement[bool]]:
    """``client_id IN ids`` as one bound value whatever the number of ids."""
    if not any_ids:
        return [A.client_id.in_([])]
    if dialect == "postgresql":
        return [in_list(A.client_id, "company_client_ids", dialect)]
    # SQLite: one JSON text rather than an IN list of thousands of parameters.
    each = func.json_each(bindparam("company_client_ids"))
    return [A.client_id.in_(select(literal_column("value")).select_from(each)
                            .scalar_subquery())]


def _ids_value(ids: Sequence[int], dialect: str) -> Any:
    return list(ids) if dialect == "postgresql" else json.dumps(list(ids))


_VALUED_CLAUSES: dict[str, Callable[..., list[ColumnElement[bool]]]] = {
    "payer_id": _nullable_in("payer_id"),
    "reseller_id": _nullable_in("reseller_id"),
    "company_name": _company,
}

# LIKE with the value's own % and _ matched literally (as ``contains(autoescape=True)``).
_LIKE_ESCAPE = "/"


def _escape_like(text: str) -> str:
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def product_ids(q: AddendumQuery) -> set[int] | None:
    """The product ids the product filters allow (internal names map 1:1 to ids)."""
    allowed: set[int] | None = None
    if q.product_id is not None:
        allowed = set(q.product_id)
    if q.product_internal_name is not None:
        named = {PRODUCT_IDS[n] for n in q.product_internal_name}
        allowed = named if allowed is None else allowed & named
    return allowed


# --- the same filters over the counter rows (counting.py) ---


def counts_where(q: AddendumQuery, caller: Caller, dialect: str) -> Where:
    """``addendum_counts`` rows of what ``caller`` may see and ``q`` filters for (only
    for the filters counting.COUNTER_FILTERS lists)."""
    shape: list[str] = [dialect]
    params: dict[str, Any] = {}
    if caller.is_reseller:
        shape.append("reseller")
        params["scope_account"] = caller.account_id
    if q.status is not None:
        shape.append("status")
        params["status"] = list(q.status)
    products = product_ids(q)
    if products is not None:
        shape.append("product_id")
        params["product_id"] = sorted(products)
    if q.client_id is not None:
        shape.append("client_id")
        params["client_id"] = list(q.client_id)
    if q.reseller_id is not None:
        shape.append("reseller_id")
        params["reseller_key"] = [-1 if v is None else v for v in q.reseller_id]
    return Where(tuple(shape), params)


@lru_cache(maxsize=64)
def counts_clauses(shape: tuple[str, ...]) -> tuple[ColumnElement[bool], ...]:
    c = COUNTS
    dialect, *parts = shape
    out: list[ColumnElement[bool]] = []
    for part in parts:
        if part == "reseller":
            out.append(tenant_clause(
                bindparam("scope_account"), [c.reseller_key], clients=c.client_id
            ))
        elif part == "reseller_id":
            out.append(in_list(c.reseller_key, "reseller_key", dialect))
        else:
            out.append(in_list(getattr(c, part), part, dialect))
    return tuple(out)


# --- ordering ---


class _Key:
    """One ordering field: its columns, with nulls placed as +infinity."""

    def __init__(self, *columns: Any, text: bool = False, nullable: bool = False) -> None:
        self.columns = columns
        self.text = text
        self.nullable = nullable

    def clauses(self, descending: bool, dialect: str) -> list[Any]:
        out = []
        for column in self.columns:
            # Code point order on both databases (SQLite's BINARY is already that).
            col = column.collate("C") if self.text and dialect == "postgresql" else column
            clause = col.desc() if descending else col.asc()
            if self.nullable:  # end null = never ends: last ascending, first descending
                clause = clause.nulls_first() if descending else clause.nulls_last()
            out.append(clause)
        return out


ORDER_KEYS: dict[str, _Key] = {
    "created_at": _Key(A.created_at),
    "active_range_start": _Key(A.active_start),
    "active_range_end": _Key(A.active_end, nullable=True),
    "id": _Key(A.id),
    "client_id": _Key(A.client_id),
    # Names sort caselessly (folded), ties by the name itself, both by code point.
    "plan_name": _Key(A.plan_name_folded, A.plan_name, text=True),
    "plan_id": _Key(A.plan_id),
    "product_name": _Key(A.product_name_folded, A.product_name, text=True),
    "product_id": _Key(A.product_id),
}


class _Direction:
    def __init__(self, key: _Key, dialect: str) -> None:
        self.key = key
        self.dialect = dialect

    def asc(self) -> list[Any]:
        return self.key.clauses(False, self.dialect)

    def desc(self) -> list[Any]:
        return self.key.clauses(True, self.dialect)


def order_by(values: Sequence[str] | None, dialect: str) -> tuple[Any, ...]:
    """ORDER BY clauses for ``ordering`` (comma-separated and/or repeated), then id.

    The same tuple for the same ordering, so that it can key a statement (repository).
    """
    return _order_by(tuple(values) if values is not None else None, dialect)


@lru_cache(maxsize=256)
def _order_by(values: tuple[str, ...] | None, dialect: str) -> tuple[Any, ...]:
    # Clauses are immutable: built once per distinct ordering (most requests use the
    # default) instead of on every request. An unknown field raises, and is not cached.
    allowed = {name: _Direction(key, dialect) for name, key in ORDER_KEYS.items()}
    nested = parse_ordering(values, allowed, tiebreak=allowed["id"])
    return tuple(clause for group in nested for clause in group)


def id_first(values: Sequence[str] | None) -> bool | None:
    """None unless the order is by id first; else whether it is descending."""
    for raw in values or []:
        for part in raw.split(","):
            name = part.strip()
            if name:
                return name == "-id" if name.lstrip("-") == "id" else None
    return False


def by_id_expression(descending: bool) -> tuple[Any, ...]:
    """Id order that no index provides (``id + 0``): the database serves the filters
    from their own indexes and sorts what they match, instead of walking the primary
    key in id order hoping to meet matches early (which misses badly when the matches
    cluster in id, as a creation range does)."""
    return _BY_ID_PLUS_0[descending]


_ID_PLUS_0 = A.id + 0
_BY_ID_PLUS_0 = {False: (_ID_PLUS_0.asc(),), True: (_ID_PLUS_0.desc(),)}
