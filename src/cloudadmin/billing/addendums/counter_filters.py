"""The list's filters over the counter rows, generated from their specs.

A filter that a counter table can count (``FilterSpec.counters``) says by its
``counted_as`` which column of the counter rows its values match, and which values
(filters.CounterForm); the scope of a reseller is the list's own tenant clause on the
counters' keys. Nothing here is written per filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import tenant_clause
from cloudadmin.billing.addendums.filter_sql import in_list, p
from cloudadmin.billing.addendums.filters import SPECS, Counter, Where
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import COUNTS, TOTALS


@dataclass(frozen=True)
class CounterShape:
    """Which conditions a sum over a counter table (TOTALS or COUNTS) has: a statement
    is built once per shape, each request binds its values (as filters.Shape)."""

    dialect: str
    table: Counter
    reseller_scope: bool = False
    columns: tuple[str, ...] = ()  # each matched against a list of values
    company: bool = False  # a company search: the named clients' rows summed in turn


def counter_where(
    q: AddendumQuery, caller: Caller, where: Where, table: Counter
) -> tuple[CounterShape, dict[str, Any]]:
    """The rows of ``table`` (counting.counter_for) that count what ``caller`` may see
    and ``q`` filters for, and the values of their conditions."""
    params: dict[str, Any] = {}
    allowed: dict[str, set[Any]] = {}
    for name in sorted(where.shape.names):
        form = SPECS[name].counted_as
        assert form is not None, f"{name} is not counted by the counters"
        value = form.values(getattr(q, name))
        if form.column is None:
            params[name] = value
            continue
        given = set(value)
        allowed[form.column] = given & allowed[form.column] if form.column in allowed else given
    for column, values in allowed.items():
        params[column] = sorted(values)
    reseller_scope = table is Counter.COUNTS and caller.is_reseller
    if reseller_scope:
        params["scope_account"] = caller.account_id
    shape = CounterShape(
        where.shape.dialect, table, reseller_scope, tuple(sorted(allowed)), "company_name" in params
    )
    return shape, params


def counter_table(shape: CounterShape) -> Any:
    """The columns of the counter table a shape sums."""
    return TOTALS if shape.table is Counter.TOTALS else COUNTS


@lru_cache(maxsize=64)
def counter_clauses(shape: CounterShape) -> tuple[ColumnElement[bool], ...]:
    """The conditions on the counter rows; the company search is not among them (its
    clients are summed one by one: repository)."""
    c = counter_table(shape)
    out: list[ColumnElement[bool]] = []
    if shape.reseller_scope:
        out.append(tenant_clause(p("scope_account"), [c.reseller_key], clients=c.client_id))
    out += [in_list(c[column], column, shape.dialect) for column in shape.columns]
    return tuple(out)
