"""The documented semantics of every filter and ordering field, as SQL (docs/billing.md).

The active period of an addendum is the half-open range [start, end): it begins at
``start`` and ends just before ``end``; a null ``end`` means it never ends (+infinity,
everywhere: filters, ordering, status_at_active_at).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
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
from cloudadmin.billing.addendums.names import fold
from cloudadmin.billing.addendums.schemas import PRODUCT_IDS, AddendumQuery
from cloudadmin.billing.addendums.tables import A, C
from cloudadmin.kit.ordering import parse_ordering


def scope(caller: Caller, *, walk: bool = False) -> list[ColumnElement[bool]]:
    """What the caller may see (access.md, operation 13).

    ``walk``: the same condition written so that no index can serve it (``col + 0``),
    for a reseller who sees a large share of the table: walking the primary key in id
    order then fills a page after a few hundred rows, where the indexes of the OR would
    fetch and sort everything the reseller sees.
    """
    if caller.is_operator:
        return []
    if caller.is_reseller:
        clients = select(C.id).where(C.reseller_id == caller.account_id)
        reseller, client = (A.reseller_id + 0, A.client_id + 0) if walk else (
            A.reseller_id, A.client_id)
        return [or_(reseller == caller.account_id, client.in_(clients.scalar_subquery()))]
    return [or_(A.client_id == caller.account_id, A.payer_id == caller.account_id)]


def _nullable_in(column: Any, values: Sequence[int | None]) -> ColumnElement[bool]:
    numbers = [v for v in values if v is not None]
    parts: list[ColumnElement[bool]] = []
    if numbers:
        parts.append(column.in_(numbers))
    if len(numbers) < len(values):
        parts.append(column.is_(None))
    return or_(*parts)


def ids_in(column: Any, ids: Sequence[int], dialect: str) -> ColumnElement[bool]:
    """``column IN ids`` as one bound value whatever the number of ids."""
    if not ids:
        return column.in_([])
    if dialect == "postgresql":
        return column == any_(bindparam("company_client_ids", list(ids), type_=ARRAY(Integer)))
    each = func.json_each(bindparam("company_client_ids", json.dumps(list(ids))))
    return column.in_(select(literal_column("value")).select_from(each).scalar_subquery())


def conditions(q: AddendumQuery) -> list[ColumnElement[bool]]:
    """Every filter of ``q`` except company_name (which needs the clients; see repository)."""
    out: list[ColumnElement[bool]] = []
    end_open = A.active_end.is_(None)
    if q.active_at is not None:  # start <= t < end
        out += [A.active_start <= q.active_at, or_(end_open, A.active_end > q.active_at)]
    if q.not_active_at is not None:
        t = q.not_active_at
        out.append(or_(A.active_start > t, and_(A.active_end.is_not(None), A.active_end <= t)))
    if q.active_after is not None:  # active at some instant later than t (period not empty)
        t = q.active_after
        out.append(or_(end_open, and_(A.active_end > t, A.active_end > A.active_start)))
    if q.active_before is not None:  # active at some instant earlier than t
        t = q.active_before
        out += [A.active_start < t, or_(end_open, A.active_end > A.active_start)]
    if q.active_start_from is not None:
        out.append(A.active_start >= q.active_start_from)
    if q.active_start_to is not None:
        out.append(A.active_start <= q.active_start_to)
    if q.active_end_from is not None:  # an open end is later than any instant
        out.append(or_(end_open, A.active_end >= q.active_end_from))
    if q.active_end_to is not None:
        out.append(and_(A.active_end.is_not(None), A.active_end <= q.active_end_to))
    if q.created_after is not None:
        out.append(A.created_at > q.created_after)
    if q.created_before is not None:
        out.append(A.created_at < q.created_before)
    if q.created_on is not None:
        day = datetime(q.created_on.year, q.created_on.month, q.created_on.day, tzinfo=UTC)
        out += [A.created_at >= day, A.created_at < day + timedelta(days=1)]
    if q.addendum_id is not None:
        out.append(A.id.in_(q.addendum_id))
    if q.id is not None:
        out.append(A.id == q.id)
    for name in ("client_id", "provider_id", "plan_id", "product_id", "currency_id",
                 "currency_char_code", "product_internal_name", "status"):
        values = getattr(q, name)
        if values is not None:
            out.append(getattr(A, name).in_(values))
    if q.payer_id is not None:
        out.append(_nullable_in(A.payer_id, q.payer_id))
    if q.reseller_id is not None:
        out.append(_nullable_in(A.reseller_id, q.reseller_id))
    if q.plan_name is not None:
        out.append(A.plan_name_folded.contains(fold(q.plan_name), autoescape=True))
    if q.product_name is not None:
        out.append(A.product_name_folded.contains(fold(q.product_name), autoescape=True))
    return out


def product_ids(q: AddendumQuery) -> set[int] | None:
    """The product ids the product filters allow (internal names map 1:1 to ids)."""
    allowed: set[int] | None = None
    if q.product_id is not None:
        allowed = set(q.product_id)
    if q.product_internal_name is not None:
        named = {PRODUCT_IDS[n] for n in q.product_internal_name}
        allowed = named if allowed is None else allowed & named
    return allowed


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


def order_by(values: Sequence[str] | None, dialect: str) -> list[Any]:
    """ORDER BY clauses for ``ordering`` (comma-separated and/or repeated), then id."""
    return list(_order_by(tuple(values) if values is not None else None, dialect))


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


def by_id_expression(descending: bool) -> list[Any]:
    """Id order that no index provides (``id + 0``): the database serves the filters
    from their own indexes and sorts what they match, instead of walking the primary
    key in id order hoping to meet matches early (which misses badly when the matches
    cluster in id, as a creation range does)."""
    return [_ID_PLUS_0.desc() if descending else _ID_PLUS_0.asc()]


_ID_PLUS_0 = A.id + 0
