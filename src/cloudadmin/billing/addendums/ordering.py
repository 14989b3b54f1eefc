"""The list's ordering fields as ORDER BY clauses (docs/billing.md, "Ordering")."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement

from cloudadmin.billing.addendums.tables import A
from cloudadmin.db.dialect import code_point_order
from cloudadmin.kit.ordering import parse_ordering

# ORDER BY clauses, the same tuple for the same ordering so that it can key a statement.
Order = tuple[ColumnElement[Any], ...]


class _Key:
    """One ordering field: its columns, with nulls placed as +infinity."""

    def __init__(self, *columns: Any, text: bool = False, nullable: bool = False) -> None:
        self.columns = columns
        self.text = text
        self.nullable = nullable

    def clauses(self, descending: bool, dialect: str) -> list[Any]:
        out = []
        for column in self.columns:
            col = code_point_order(dialect, column) if self.text else column
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


def order_by(values: Sequence[str] | None, dialect: str) -> Order:
    """ORDER BY clauses for ``ordering`` (comma-separated and/or repeated), then id.

    The same tuple for the same ordering, so that it can key a statement (repository).
    """
    return _order_by(tuple(values) if values is not None else None, dialect)


@lru_cache(maxsize=256)
def _order_by(values: tuple[str, ...] | None, dialect: str) -> Order:
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


def by_id_expression(descending: bool) -> Order:
    """Id order that no index provides (``id + 0``): the database serves the filters
    from their own indexes and sorts what they match, instead of walking the primary
    key in id order hoping to meet matches early (which misses badly when the matches
    cluster in id, as a creation range does)."""
    return _BY_ID_PLUS_0[descending]


_ID_PLUS_0 = A.id + 0
_BY_ID_PLUS_0 = {False: (_ID_PLUS_0.asc(),), True: (_ID_PLUS_0.desc(),)}
