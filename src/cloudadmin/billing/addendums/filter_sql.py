"""The SQL of the filters' conditions: the builders that filters.FILTERS names, each
taking a filter's :class:`Part` (which variant of its conditions) and the dialect, and
reading its values from parameters named after the filter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    String,
    any_,
    bindparam,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY

from cloudadmin.billing.addendums.tables import A, C


@dataclass(frozen=True)
class Part:
    """One filter's conditions in a statement: which variant of its SQL, never a value."""

    name: str
    values: bool = True  # a nullable list holds numbers (it may hold null alone)
    null: bool = False  # a nullable list also matches rows without a value
    one: bool = False  # a list of exactly one value: an equality, which an index serves


Clause = Callable[[Part, str], list[ColumnElement[bool]]]


def p(name: str) -> BindParameter[Any]:
    return bindparam(name)


def end_open() -> ColumnElement[bool]:
    return A.active_end.is_(None)


def fixed(*build: Callable[[], ColumnElement[bool]]) -> Clause:
    """Conditions that are the same for every value (the value is a parameter)."""
    return lambda part, dialect: [b() for b in build]


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
        result: ColumnElement[bool] = column == any_(bindparam(name, type_=ARRAY(item)))
        return result
    expanding: ColumnElement[bool] = column.in_(bindparam(name, expanding=True))
    return expanding


def listed(column: Any) -> Clause:
    """One of the values; a single value as an equality, which an index on (column, id)
    serves in id order (an array's ``= ANY`` is not served in order on PostgreSQL)."""

    def build(part: Part, dialect: str) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = []
        if part.values:
            equal: ColumnElement[bool] = column == p(part.name)
            conditions.append(equal if part.one else in_list(column, part.name, dialect))
        if part.null:
            conditions.append(column.is_(None))
        return [or_(*conditions)] if len(conditions) > 1 else conditions

    return build


# LIKE with the value's own % and _ matched literally (as ``contains(autoescape=True)``).
_LIKE_ESCAPE = "/"


def escape_like(text: str) -> str:
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def contains_few(folded: Any) -> Clause:
    """The folded copy of a name contains the folded value (docs/billing.md, "Names").

    Plans and products come from a catalogue: few addendums spell their names
    differently. On PostgreSQL ``LIKE '%…%'`` over every addendum is
    a scan of the table; instead its distinct values are walked in the B-tree index on
    the column (a recursive query: one index probe per distinct value, about 50 in a
    catalogue), the ones that contain the value are kept, and the addendums are those
    equal to one of them: the count reads only their index entries, the page walks the
    ids as before (docs/billing.md, "Names")."""

    def build(part: Part, dialect: str) -> list[ColumnElement[bool]]:
        if dialect != "postgresql":
            return [folded.contains(p(part.name), escape=_LIKE_ESCAPE)]
        return [folded == any_(_values_containing(folded, part.name))]

    return build


def _values_containing(folded: Any, name: str) -> Any:
    """The array of the column's distinct values that contain the parameter ``name``
    (empty when none does)."""
    walked = folded.table.alias()
    first = select(func.min(walked.c[folded.key]).label("value"))
    values = first.cte(f"{folded.key}_values", recursive=True, nesting=True)
    after = folded.table.alias()
    following = select(func.min(after.c[folded.key])).where(after.c[folded.key] > values.c.value)
    values = values.union_all(
        select(following.scalar_subquery()).where(values.c.value.is_not(None))
    )
    containing = values.c.value.contains(p(name), escape=_LIKE_ESCAPE)
    found = select(func.array_agg(values.c.value)).where(containing).scalar_subquery()
    # An array expression (a bare subquery after ANY would compare with each of its rows).
    return func.coalesce(found, literal_column("'{}'"))


def company_named(client: Any) -> ColumnElement[bool]:
    """The client (columns of ``clients`` or of an alias of it) has a current company
    name that contains the value: matched in the clients table (kept folded there, and
    indexed by trigrams on PostgreSQL: migration 0018), so that a rename shows at once."""
    condition: ColumnElement[bool] = client.company_name_folded.contains(
        p("company_name"), escape=_LIKE_ESCAPE
    )
    return condition


def _named_clients(client_id: Any) -> ColumnElement[bool]:
    """``client_id`` is a client whose company name contains the value."""
    condition: ColumnElement[bool] = client_id.in_(select(C.id).where(company_named(C)))
    return condition


def company(part: Part, dialect: str) -> list[ColumnElement[bool]]:
    return [_named_clients(A.client_id)]
