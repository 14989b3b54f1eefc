"""Every filter of the list, declared once, and the SQL of a request's filters and scope.

A :class:`FilterSpec` per query parameter (:data:`FILTERS`) says how its value is bound,
its WHERE conditions (the semantics of docs/billing.md) and which counter tables can
count it; every other table of the module is derived from these. The parameters
themselves (types, bounds, descriptions) are the fields of ``schemas.AddendumQuery`` of
the same names, checked against :data:`FILTERS` on import.

The active period of an addendum is the half-open range [start, end): it begins at
``start`` and ends just before ``end``; a null ``end`` means it never ends (+infinity,
everywhere: filters, ordering, status_at_active_at).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from enum import Enum
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, and_, or_

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import refuse_seller, tenant_clause
from cloudadmin.billing.addendums.creation_days import utc_day
from cloudadmin.billing.addendums.filter_sql import (
    Clause,
    Part,
    company,
    contains_few,
    end_open,
    escape_like,
    fixed,
    listed,
    p,
)
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import A
from cloudadmin.billing.catalogue import PRODUCT_IDS
from cloudadmin.kit.caseless import fold

__all__ = ["Part"]


class Kind(Enum):
    """How a filter's value is bound to its conditions."""

    INSTANT = "instant"  # one instant, as the parameter of the filter's name
    DAY = "day"  # one UTC date: its first and last instant
    NUMBER = "number"  # one number
    LIST = "list"  # values, any of which matches
    NULLABLE_LIST = "nullable list"  # numbers and/or null (no value)
    SEARCH = "search"  # a caseless substring of a folded name (kit/caseless.py)


class Counter(Enum):
    """The counter tables kept by triggers (counting.py, docs/billing.md "Counting")."""

    TOTALS = "totals"  # (status, product_id)
    COUNTS = "counts"  # (client_id, reseller_key, status, product_id)
    DAYS = "days"  # day of creation


class Scope(Enum):
    """What the caller may see (docs/access.md), as the statement writes it."""

    OPERATOR = "operator"
    RESELLER = "reseller"
    # The reseller's condition written so that no index serves it (``col + 0``), for a
    # reseller who sees a large share of the table: walking the primary key in id order
    # then fills a page after a few hundred rows, where the indexes of the OR would
    # fetch and sort everything the reseller sees.
    RESELLER_WALK = "reseller walk"
    ACCOUNT = "account"  # an account's own addendums: as client or as payer

    @classmethod
    def of(cls, caller: Caller) -> Scope:
        refuse_seller(caller)  # no scope here is a seller's (its assigned clients)
        if caller.is_operator:
            return cls.OPERATOR
        return cls.RESELLER if caller.is_reseller else cls.ACCOUNT


@dataclass(frozen=True)
class CounterForm:
    """A filter written over the counter rows: the counters' column its values match
    (None: the company search, which names clients; summed client by client) and the
    values it matches there, from the parameter's value. Two filters of one column
    match the values both allow."""

    column: str | None
    values: Callable[[Any], Any] = list


@dataclass(frozen=True)
class FilterSpec:
    """One query parameter of the list: the one place that declares it."""

    name: str
    kind: Kind
    clause: Clause  # its conditions, taking values from parameters named after it
    counters: frozenset[Counter] = frozenset()  # counter tables that can count it
    # Its form over the counter rows (counter_filters.py), when ``counters`` names any.
    counted_as: CounterForm | None = None
    # The index (its columns, then id) whose leading columns are this filter's and its
    # partners': single values of all of them are an index range in id order.
    id_ordered_index: str | None = None


@dataclass(frozen=True)
class Shape:
    """Which conditions a statement has, and nothing of their values: a statement is
    built once per shape (:func:`clauses`) with named parameters, and every request only
    supplies its values (building and cache-keying a SQLAlchemy statement on every
    request cost about a seventh of the list's CPU; docs/billing.md)."""

    dialect: str
    scope: Scope
    parts: tuple[Part, ...]
    id_range: bool = False  # id between :id_low and :id_high (counting.Counted.ids)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(part.name for part in self.parts)


@dataclass(frozen=True)
class Where:
    """The scope and filters of a request: its shape and its values."""

    shape: Shape
    params: Mapping[str, Any] = field(hash=False)

    def rewritten(
        self,
        *,
        scope: Scope | None = None,
        id_range: tuple[int, int] | None = None,
        named_clients: Sequence[int] | None = None,
    ) -> Where:
        """The same rows written another way: the reseller scope for a walk; with
        bounds known to hold every match's id, so that an id-order page walks the
        primary key only there; or with the clients a company search named (found by
        its count) in place of the search, as a client_id list."""
        shape, params = self.shape, dict(self.params)
        if scope is not None:
            shape = replace(shape, scope=scope)
        if id_range is not None:
            shape = replace(shape, id_range=True)
            params["id_low"], params["id_high"] = id_range
        if named_clients is not None:
            shape, params = _clients_forcompany(shape, params, named_clients)
        return Where(shape, params)


def _clients_forcompany(
    shape: Shape, params: dict[str, Any], named: Sequence[int]
) -> tuple[Shape, dict[str, Any]]:
    """The company search replaced by ``client_id`` in the clients it names (and in
    the client_id filter's own list, when there is one). Matching each addendum's client
    against a list known in advance is cheaper than against the name search: the
    statement of a 22,000-row search took 0.6 ms against 1.3 ms (planned per execution
    either way, on PostgreSQL)."""
    clients = list(named)
    if "client_id" in shape.names:
        given = params["client_id"]
        allowed = {given} if isinstance(given, int) else set(given)
        clients = [c for c in clients if c in allowed]
    params.pop("company_name", None)
    one = len(clients) == 1
    params["client_id"] = clients[0] if one else clients
    kept = [p for p in shape.parts if p.name not in ("company_name", "client_id")]
    parts = sorted([*kept, Part("client_id", one=one)], key=lambda p: _ORDER[p.name])
    return replace(shape, parts=tuple(parts)), params


_BOTH = frozenset({Counter.TOTALS, Counter.COUNTS})
_COUNTS = frozenset({Counter.COUNTS})
# The indexes that give one value's (or one pair's) matches in id order.
_BY_CLIENT = "ix_addendums_client_id_id"
_BY_PRODUCT = "ix_addendums_product_id_status_id"


def _counted(
    name: str,
    column: Any,
    counters: frozenset[Counter],
    form: CounterForm,
    id_ordered_index: str | None = None,
    kind: Kind = Kind.LIST,
) -> FilterSpec:
    """A list filter that counter rows can count, written over them as ``form`` says."""
    return FilterSpec(
        name, kind, listed(column), counters, counted_as=form, id_ordered_index=id_ordered_index
    )


def _reseller_keys(ids: list[int | None]) -> list[int]:
    """The counters key a reseller's absence as -1 (their key has no null)."""
    return [-1 if i is None else i for i in ids]


def _named_products(names: list[str]) -> list[int]:
    """Internal names are a function of product ids: the importer enforces the
    catalogue's pairing, so the counters, which know product ids only, can answer them."""
    return [PRODUCT_IDS[n] for n in names]


_RESELLER_KEY = CounterForm("reseller_key", _reseller_keys)
_NAMED_PRODUCTS = CounterForm("product_id", _named_products)


FILTERS: tuple[FilterSpec, ...] = (
    # start <= t < end
    FilterSpec(
        "active_at",
        Kind.INSTANT,
        fixed(
            lambda: A.active_start <= p("active_at"),
            lambda: or_(end_open(), A.active_end > p("active_at")),
        ),
    ),
    FilterSpec(
        "not_active_at",
        Kind.INSTANT,
        fixed(
            lambda: or_(
                A.active_start > p("not_active_at"),
                and_(A.active_end.is_not(None), A.active_end <= p("not_active_at")),
            )
        ),
    ),
    # active at some instant later than t (and the period is not empty)
    FilterSpec(
        "active_after",
        Kind.INSTANT,
        fixed(
            lambda: or_(
                end_open(), and_(A.active_end > p("active_after"), A.active_end > A.active_start)
            )
        ),
    ),
    # active at some instant earlier than t
    FilterSpec(
        "active_before",
        Kind.INSTANT,
        fixed(
            lambda: A.active_start < p("active_before"),
            lambda: or_(end_open(), A.active_end > A.active_start),
        ),
    ),
    FilterSpec(
        "active_start_from", Kind.INSTANT, fixed(lambda: A.active_start >= p("active_start_from"))
    ),
    FilterSpec(
        "active_start_to", Kind.INSTANT, fixed(lambda: A.active_start <= p("active_start_to"))
    ),
    # an open end is later than any instant
    FilterSpec(
        "active_end_from",
        Kind.INSTANT,
        fixed(lambda: or_(end_open(), A.active_end >= p("active_end_from"))),
    ),
    FilterSpec(
        "active_end_to",
        Kind.INSTANT,
        fixed(lambda: and_(A.active_end.is_not(None), A.active_end <= p("active_end_to"))),
    ),
    FilterSpec(
        "created_after",
        Kind.INSTANT,
        fixed(lambda: A.created_at > p("created_after")),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec(
        "created_before",
        Kind.INSTANT,
        fixed(lambda: A.created_at < p("created_before")),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec(
        "created_on",
        Kind.DAY,
        fixed(
            lambda: A.created_at >= p("created_on_from"),
            lambda: A.created_at <= p("created_on_last"),
        ),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec("addendum_id", Kind.LIST, listed(A.id)),
    FilterSpec("id", Kind.NUMBER, fixed(lambda: A.id == p("id"))),
    _counted("client_id", A.client_id, _COUNTS, CounterForm("client_id"), _BY_CLIENT),
    FilterSpec("payer_id", Kind.NULLABLE_LIST, listed(A.payer_id)),
    FilterSpec("provider_id", Kind.LIST, listed(A.provider_id)),
    _counted("reseller_id", A.reseller_id, _COUNTS, _RESELLER_KEY, kind=Kind.NULLABLE_LIST),
    FilterSpec("plan_id", Kind.LIST, listed(A.plan_id)),
    _counted("product_id", A.product_id, _BOTH, CounterForm("product_id"), _BY_PRODUCT),
    FilterSpec("currency_id", Kind.LIST, listed(A.currency_id)),
    FilterSpec("currency_char_code", Kind.LIST, listed(A.currency_char_code)),
    _counted("product_internal_name", A.product_internal_name, _BOTH, _NAMED_PRODUCTS),
    # Counted from addendum_counts, whose key starts with the client: a typical client
    # has a few hundred addendums and about a hundred counter rows; the search names
    # the clients whose rows are summed.
    FilterSpec(
        "company_name",
        Kind.SEARCH,
        company,
        _COUNTS,
        counted_as=CounterForm(None, lambda name: escape_like(fold(name))),
    ),
    FilterSpec("plan_name", Kind.SEARCH, contains_few(A.plan_name_folded)),
    FilterSpec("product_name", Kind.SEARCH, contains_few(A.product_name_folded)),
    _counted("status", A.status, _BOTH, CounterForm("status"), _BY_PRODUCT),
)
SPECS: dict[str, FilterSpec] = {spec.name: spec for spec in FILTERS}

# The query's other fields say how to page, not what to match.
# Each filter's place in FILTERS: a shape's parts are in that order.
_ORDER = {spec.name: i for i, spec in enumerate(FILTERS)}
PAGING = frozenset({"limit", "offset", "ordering"})
if set(SPECS) != set(AddendumQuery.model_fields) - PAGING:
    raise RuntimeError("filters.FILTERS and schemas.AddendumQuery name different filters")
if any(bool(s.counters - {Counter.DAYS}) != (s.counted_as is not None) for s in FILTERS):
    raise RuntimeError("filters.FILTERS: a filter counted by the counter rows needs its form")
# The filters of each id-ordered index, together.
ID_ORDERED: frozenset[frozenset[str]] = frozenset(
    frozenset(s.name for s in FILTERS if s.id_ordered_index == spec.id_ordered_index)
    for spec in FILTERS
    if spec.id_ordered_index is not None
)


def _bind(spec: FilterSpec, value: Any, params: dict[str, Any]) -> Part:
    """Puts ``value`` into ``params`` as ``spec``'s conditions read it; its part."""
    name = spec.name
    if spec.kind is Kind.DAY:
        assert isinstance(value, date)
        params["created_on_from"], params["created_on_last"] = utc_day(value)
        return Part(name)
    if spec.kind is Kind.SEARCH:
        params[name] = escape_like(fold(value))
        return Part(name)
    if spec.kind in (Kind.LIST, Kind.NULLABLE_LIST):
        numbers = [v for v in value if v is not None]
        one = len(numbers) == 1
        params[name] = numbers[0] if one else numbers
        return Part(name, values=bool(numbers), null=len(numbers) < len(value), one=one)
    params[name] = value  # INSTANT, NUMBER
    return Part(name)


def where(q: AddendumQuery, caller: Caller, dialect: str) -> Where:
    """What ``caller`` may see of the addendums ``q`` filters for."""
    params: dict[str, Any] = {}
    if not caller.is_operator:
        params["scope_account"] = caller.account_id
    parts = tuple(
        _bind(spec, value, params)
        for spec in FILTERS
        if (value := getattr(q, spec.name)) is not None
    )
    return Where(Shape(dialect, Scope.of(caller), parts), params)


@lru_cache(maxsize=512)
def clauses(shape: Shape) -> tuple[ColumnElement[bool], ...]:
    """The WHERE conditions of a shape, with named parameters."""
    out = _scope(shape.scope)
    for part in shape.parts:
        out += SPECS[part.name].clause(part, shape.dialect)
    if shape.id_range:
        out += [A.id >= p("id_low"), A.id <= p("id_high")]
    return tuple(out)


def _scope(scope: Scope) -> list[ColumnElement[bool]]:
    if scope is Scope.OPERATOR:
        return []
    account = p("scope_account")
    if scope is Scope.RESELLER_WALK:
        return [tenant_clause(account, [A.reseller_id + 0], clients=A.client_id + 0)]
    if scope is Scope.RESELLER:
        # Rows of the reseller or of one of its clients.
        return [tenant_clause(account, [A.reseller_id], clients=A.client_id)]
    return [tenant_clause(account, [A.client_id, A.payer_id])]
