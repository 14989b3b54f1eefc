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

from sqlalchemy import (
    BindParameter,
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
from cloudadmin.auth.scoping import refuse_seller, tenant_clause
from cloudadmin.billing.addendums.creation_days import utc_day
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import COUNTS, A, C
from cloudadmin.billing.catalogue import PRODUCT_IDS
from cloudadmin.kit.caseless import fold


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
class Part:
    """One filter's conditions in a statement: which variant of its SQL, never a value."""

    name: str
    values: bool = True  # a nullable list holds numbers (it may hold null alone)
    null: bool = False  # a nullable list also matches rows without a value
    one: bool = False  # a list of exactly one value: an equality, which an index serves


Clause = Callable[[Part, str], list[ColumnElement[bool]]]


@dataclass(frozen=True)
class FilterSpec:
    """One query parameter of the list: the one place that declares it."""

    name: str
    kind: Kind
    clause: Clause  # its conditions, taking values from parameters named after it
    counters: frozenset[Counter] = frozenset()  # counter tables that can count it
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
            shape, params = _clients_for_company(shape, params, named_clients)
        return Where(shape, params)


def _clients_for_company(
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


# --- the filters ---


def _p(name: str) -> BindParameter[Any]:
    return bindparam(name)


def _end_open() -> ColumnElement[bool]:
    return A.active_end.is_(None)


def _fixed(*build: Callable[[], ColumnElement[bool]]) -> Clause:
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


def _listed(column: Any) -> Clause:
    """One of the values; a single value as an equality, which an index on (column, id)
    serves in id order (an array's ``= ANY`` is not served in order on PostgreSQL)."""

    def build(part: Part, dialect: str) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = []
        if part.values:
            equal: ColumnElement[bool] = column == _p(part.name)
            conditions.append(equal if part.one else in_list(column, part.name, dialect))
        if part.null:
            conditions.append(column.is_(None))
        return [or_(*conditions)] if len(conditions) > 1 else conditions

    return build


# LIKE with the value's own % and _ matched literally (as ``contains(autoescape=True)``).
_LIKE_ESCAPE = "/"


def _escape_like(text: str) -> str:
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def _contains_few(folded: Any) -> Clause:
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
            return [folded.contains(_p(part.name), escape=_LIKE_ESCAPE)]
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
    containing = values.c.value.contains(_p(name), escape=_LIKE_ESCAPE)
    found = select(func.array_agg(values.c.value)).where(containing).scalar_subquery()
    # An array expression (a bare subquery after ANY would compare with each of its rows).
    return func.coalesce(found, literal_column("'{}'"))


def company_named(client: Any) -> ColumnElement[bool]:
    """The client (columns of ``clients`` or of an alias of it) has a current company
    name that contains the value: matched in the clients table (kept folded there, and
    indexed by trigrams on PostgreSQL: migration 0018), so that a rename shows at once."""
    condition: ColumnElement[bool] = client.company_name_folded.contains(
        _p("company_name"), escape=_LIKE_ESCAPE
    )
    return condition


def _named_clients(client_id: Any) -> ColumnElement[bool]:
    """``client_id`` is a client whose company name contains the value."""
    condition: ColumnElement[bool] = client_id.in_(select(C.id).where(company_named(C)))
    return condition


def _company(part: Part, dialect: str) -> list[ColumnElement[bool]]:
    return [_named_clients(A.client_id)]


_COUNTED = frozenset({Counter.TOTALS, Counter.COUNTS})

FILTERS: tuple[FilterSpec, ...] = (
    # start <= t < end
    FilterSpec(
        "active_at",
        Kind.INSTANT,
        _fixed(
            lambda: A.active_start <= _p("active_at"),
            lambda: or_(_end_open(), A.active_end > _p("active_at")),
        ),
    ),
    FilterSpec(
        "not_active_at",
        Kind.INSTANT,
        _fixed(
            lambda: or_(
                A.active_start > _p("not_active_at"),
                and_(A.active_end.is_not(None), A.active_end <= _p("not_active_at")),
            )
        ),
    ),
    # active at some instant later than t (and the period is not empty)
    FilterSpec(
        "active_after",
        Kind.INSTANT,
        _fixed(
            lambda: or_(
                _end_open(), and_(A.active_end > _p("active_after"), A.active_end > A.active_start)
            )
        ),
    ),
    # active at some instant earlier than t
    FilterSpec(
        "active_before",
        Kind.INSTANT,
        _fixed(
            lambda: A.active_start < _p("active_before"),
            lambda: or_(_end_open(), A.active_end > A.active_start),
        ),
    ),
    FilterSpec(
        "active_start_from", Kind.INSTANT, _fixed(lambda: A.active_start >= _p("active_start_from"))
    ),
    FilterSpec(
        "active_start_to", Kind.INSTANT, _fixed(lambda: A.active_start <= _p("active_start_to"))
    ),
    # an open end is later than any instant
    FilterSpec(
        "active_end_from",
        Kind.INSTANT,
        _fixed(lambda: or_(_end_open(), A.active_end >= _p("active_end_from"))),
    ),
    FilterSpec(
        "active_end_to",
        Kind.INSTANT,
        _fixed(lambda: and_(A.active_end.is_not(None), A.active_end <= _p("active_end_to"))),
    ),
    FilterSpec(
        "created_after",
        Kind.INSTANT,
        _fixed(lambda: A.created_at > _p("created_after")),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec(
        "created_before",
        Kind.INSTANT,
        _fixed(lambda: A.created_at < _p("created_before")),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec(
        "created_on",
        Kind.DAY,
        _fixed(
            lambda: A.created_at >= _p("created_on_from"),
            lambda: A.created_at <= _p("created_on_last"),
        ),
        frozenset({Counter.DAYS}),
    ),
    FilterSpec("addendum_id", Kind.LIST, _listed(A.id)),
    FilterSpec("id", Kind.NUMBER, _fixed(lambda: A.id == _p("id"))),
    FilterSpec(
        "client_id",
        Kind.LIST,
        _listed(A.client_id),
        frozenset({Counter.COUNTS}),
        "ix_addendums_client_id_id",
    ),
    FilterSpec("payer_id", Kind.NULLABLE_LIST, _listed(A.payer_id)),
    FilterSpec("provider_id", Kind.LIST, _listed(A.provider_id)),
    FilterSpec(
        "reseller_id", Kind.NULLABLE_LIST, _listed(A.reseller_id), frozenset({Counter.COUNTS})
    ),
    FilterSpec("plan_id", Kind.LIST, _listed(A.plan_id)),
    FilterSpec(
        "product_id",
        Kind.LIST,
        _listed(A.product_id),
        _COUNTED,
        "ix_addendums_product_id_status_id",
    ),
    FilterSpec("currency_id", Kind.LIST, _listed(A.currency_id)),
    FilterSpec("currency_char_code", Kind.LIST, _listed(A.currency_char_code)),
    # A function of product_id: the importer enforces the catalogue's pairing, so the
    # counters, which know product ids only, can answer it.
    FilterSpec("product_internal_name", Kind.LIST, _listed(A.product_internal_name), _COUNTED),
    # Counted from addendum_counts, whose key starts with the client: a typical client
    # has a few hundred addendums and about a hundred counter rows.
    FilterSpec("company_name", Kind.SEARCH, _company, frozenset({Counter.COUNTS})),
    FilterSpec("plan_name", Kind.SEARCH, _contains_few(A.plan_name_folded)),
    FilterSpec("product_name", Kind.SEARCH, _contains_few(A.product_name_folded)),
    FilterSpec(
        "status", Kind.LIST, _listed(A.status), _COUNTED, "ix_addendums_product_id_status_id"
    ),
)
SPECS: dict[str, FilterSpec] = {spec.name: spec for spec in FILTERS}

# The query's other fields say how to page, not what to match.
# Each filter's place in FILTERS: a shape's parts are in that order.
_ORDER = {spec.name: i for i, spec in enumerate(FILTERS)}
PAGING = frozenset({"limit", "offset", "ordering"})
if set(SPECS) != set(AddendumQuery.model_fields) - PAGING:
    raise RuntimeError("filters.FILTERS and schemas.AddendumQuery name different filters")
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
        params[name] = _escape_like(fold(value))
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
        out += [A.id >= _p("id_low"), A.id <= _p("id_high")]
    return tuple(out)


def _scope(scope: Scope) -> list[ColumnElement[bool]]:
    if scope is Scope.OPERATOR:
        return []
    account = _p("scope_account")
    if scope is Scope.RESELLER_WALK:
        return [tenant_clause(account, [A.reseller_id + 0], clients=A.client_id + 0)]
    if scope is Scope.RESELLER:
        # Rows of the reseller or of one of its clients.
        return [tenant_clause(account, [A.reseller_id], clients=A.client_id)]
    return [tenant_clause(account, [A.client_id, A.payer_id])]


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


@dataclass(frozen=True)
class CountsShape:
    """Which conditions a sum over ``addendum_counts`` has."""

    dialect: str
    reseller_scope: bool
    status: bool
    product: bool
    client: bool
    reseller: bool
    company: bool


def counts_where(
    q: AddendumQuery, caller: Caller, dialect: str
) -> tuple[CountsShape, dict[str, Any]]:
    """``addendum_counts`` rows of what ``caller`` may see and ``q`` filters for (only
    for filters whose spec names Counter.COUNTS)."""
    params: dict[str, Any] = {}
    if caller.is_reseller:
        params["scope_account"] = caller.account_id
    if q.status is not None:
        params["status"] = list(q.status)
    products = product_ids(q)
    if products is not None:
        params["product_id"] = sorted(products)
    if q.client_id is not None:
        params["client_id"] = list(q.client_id)
    if q.reseller_id is not None:
        params["reseller_key"] = [-1 if v is None else v for v in q.reseller_id]
    if q.company_name is not None:
        params["company_name"] = _escape_like(fold(q.company_name))
    shape = CountsShape(
        dialect,
        caller.is_reseller,
        q.status is not None,
        products is not None,
        q.client_id is not None,
        q.reseller_id is not None,
        q.company_name is not None,
    )
    return shape, params


@lru_cache(maxsize=64)
def counts_clauses(shape: CountsShape) -> tuple[ColumnElement[bool], ...]:
    """The conditions on ``addendum_counts`` rows; the company name is not among them
    (its clients are summed one by one: repository.counts_statement)."""
    c, dialect = COUNTS, shape.dialect
    out: list[ColumnElement[bool]] = []
    if shape.reseller_scope:
        out.append(tenant_clause(_p("scope_account"), [c.reseller_key], clients=c.client_id))
    if shape.status:
        out.append(in_list(c.status, "status", dialect))
    if shape.product:
        out.append(in_list(c.product_id, "product_id", dialect))
    if shape.client:
        out.append(in_list(c.client_id, "client_id", dialect))
    if shape.reseller:
        out.append(in_list(c.reseller_key, "reseller_key", dialect))
    return tuple(out)
