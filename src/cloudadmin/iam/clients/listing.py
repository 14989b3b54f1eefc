"""GET /iam/clients: which accounts match, in which order (docs/iam.md).

The accounts a caller may list are few next to the addendums (10,000 in the largest
landscape), so the matching ids are read in order in one statement and the page is
cut from them: the count is exact and an offset past the end is simply empty. Caseless
text and the JSON filters are applied in Python to the rows that statement returns,
so that they match the same on SQLite and PostgreSQL (kit/caseless.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, exists, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db.dialect import code_point_order
from cloudadmin.db.filters import equal_where_given
from cloudadmin.db.models import Client, User
from cloudadmin.iam.clients.query import NULL, ClientListQuery
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.ordering import parse_ordering

CHUNK = 500  # ids per IN list: far below SQLite's limit on bound parameters
# serviceStatuses key of each status filter; the last two are services accounts here
# do not have.
STATUS_FILTERS = {
    "cdn": "CDN",
    "storage": "STORAGE",
    "ddos": "DDOS",
    "dns": "DNS",
    "cloud": "CLOUD",
}
ABSENT_SERVICES = ("infrastructure_protection", "connect")
# Data this service does not keep about accounts: a value matches no account.
NOT_KEPT = ("min_traffic", "max_traffic", "secondaryhostnames", "promocode")


def _scope(caller: Caller) -> ColumnElement[bool]:
    """Operator: every account. Reseller: its clients (not itself). Seller: the clients
    assigned to it."""
    if caller.is_seller:
        return caller_scope(caller, Client.id)
    return caller_scope(caller, Client.reseller_id)


class _Key:
    """An ordering field; text by code point on both databases, null names last."""

    def __init__(
        self, column: Any, *, text: bool = False, nullable: bool = False, dialect: str = "sqlite"
    ) -> None:
        self.column = code_point_order(dialect, column) if text else column
        self.nullable = nullable

    def asc(self) -> Any:
        clause = self.column.asc()
        return clause.nulls_last() if self.nullable else clause

    def desc(self) -> Any:
        clause = self.column.desc()
        return clause.nulls_first() if self.nullable else clause


def _order(q: ClientListQuery, dialect: str) -> list[Any]:
    keys = {
        "id": _Key(Client.id),
        "email": _Key(Client.email, text=True, dialect=dialect),
        "name": _Key(Client.name, text=True, nullable=True, dialect=dialect),
        "status": _Key(Client.status, text=True, dialect=dialect),
        "companyName": _Key(Client.company_name, text=True, dialect=dialect),
        "created_at": _Key(Client.created_at),
    }
    return parse_ordering(q.ordering, keys, tiebreak=keys["id"])


def _sql_conditions(q: ClientListQuery) -> list[ColumnElement[bool]]:
    c = Client
    out = equal_where_given(
        (c.reseller_id, q.reseller_id),
        (c.seller_id, q.seller_id),
        (c.custom_id, q.custom_id),
        (c.bill_type, q.bill_type),
        (c.client_type, q.client_type),
    )
    if any(getattr(q, name) is not None for name in (*ABSENT_SERVICES, *NOT_KEPT)):
        out.append(false())
    deleted = q.only_deleted()
    if deleted is not None:
        out.append(c.deleted.is_(deleted))
    for param, service in STATUS_FILTERS.items():
        value = getattr(q, param)
        if value is not None:
            # A service missing from stored data is "new", as the answer shows it.
            stored = c.service_statuses[service]["status"].as_string()
            out.append(func.coalesce(stored, "new") == value)
    if q.activated is not None:
        confirmed = exists().where(
            User.client_id == c.id, User.deleted.is_(False), User.activated.is_(True)
        )
        out.append(confirmed if q.activated else ~confirmed)
    if q.id__in__exclude:
        out.append(c.id.not_in(q.id__in__exclude))
    if q.created_at_gte is not None:
        out.append(c.created_at >= q.created_at_gte)
    if q.created_at_lte is not None:
        out.append(c.created_at <= q.created_at_lte)
    if q.is_test is not None:
        out.append(c.is_test.is_(q.is_test))
    if q.country_code == NULL:
        out.append(c.country_code.is_(None))
    elif q.country_code is not None:
        out.append(func.upper(c.country_code) == q.country_code)
    return out


def _contains(needle: str | None, text: str | None) -> bool:
    return needle is None or (text is not None and fold(needle) in fold(text))


def _has_feature(row: Any, wanted: set[int]) -> bool:
    for features in (row.paid_features, row.free_features):
        if not isinstance(features, dict):
            continue
        for items in features.values():
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("feature_id") in wanted:
                    return True
    return False


def _row_matches(q: ClientListQuery, row: Any) -> bool:
    if q.email is not None and fold(row.email) != fold(q.email):
        return False
    if q.companyName is not None and not _contains(q.companyName, row.company_name):
        return False
    if q.name is not None and not _contains(q.name, row.name):
        return False
    if q.feature_id_in is not None and not _has_feature(row, set(q.feature_id_in)):
        return False
    if q.personal_product_availability is not None:
        own = row.service_availability if isinstance(row.service_availability, dict) else {}
        if not any(own.get(p) is True for p in q.personal_product_availability):
            return False
    return True


# The columns each filter applied in Python reads (only those are fetched: decoding
# every JSON column of 10,000 accounts would cost more than the filter).
_ROW_FILTERS: dict[str, tuple[Any, ...]] = {
    "email": (Client.email,),
    "companyName": (Client.company_name,),
    "name": (Client.name,),
    "feature_id_in": (Client.paid_features, Client.free_features),
    "personal_product_availability": (Client.service_availability,),
}


def _row_columns(q: ClientListQuery) -> list[Any]:
    return [
        column
        for name, columns in _ROW_FILTERS.items()
        if getattr(q, name) is not None
        for column in columns
    ]


async def _user_matches(
    session: AsyncSession, q: ClientListQuery, where: list[ColumnElement[bool]]
) -> set[int]:
    """Accounts with a user (not deleted) whose name and e-mail match."""
    accounts = select(Client.id).where(*where)
    stmt = select(User.client_id, User.name, User.email).where(
        User.client_id.in_(accounts.scalar_subquery()), User.deleted.is_(False)
    )
    return {
        client_id
        for client_id, name, email in await session.execute(stmt)
        if _contains(q.users_name, name) and _contains(q.users_email, email)
    }


async def matching_ids(session: AsyncSession, caller: Caller, q: ClientListQuery) -> list[int]:
    """Ids of every account ``caller`` may list that ``q`` matches, in ``q``'s order.

    A bad ordering field is a 400 before any query."""
    dialect = session.get_bind().dialect.name
    order = _order(q, dialect)
    where = [_scope(caller), *_sql_conditions(q)]
    row_columns = _row_columns(q)
    stmt = select(Client.id, *row_columns).where(*where).order_by(*order)
    rows = (await session.execute(stmt)).all()
    if row_columns:
        rows = [r for r in rows if _row_matches(q, r)]
    ids = [r.id for r in rows]
    if q.users_name is not None or q.users_email is not None:
        with_user = await _user_matches(session, q, where)
        ids = [i for i in ids if i in with_user]
    return ids


def _chunks(ids: Sequence[int]) -> list[Sequence[int]]:
    return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]


async def accounts(session: AsyncSession, ids: Sequence[int]) -> list[Client]:
    """The accounts of ``ids``, in that order."""
    found: dict[int, Client] = {}
    for chunk in _chunks(ids):
        rows = await session.execute(select(Client).where(Client.id.in_(chunk)))
        found.update((row.id, row) for row in rows.scalars())
    return [found[i] for i in ids if i in found]


async def users_by_account(session: AsyncSession, ids: Sequence[int]) -> dict[int, list[User]]:
    """The users (not deleted) of each account of ``ids``, by id."""
    out: dict[int, list[User]] = defaultdict(list)
    for chunk in _chunks(ids):
        stmt = (
            select(User).where(User.client_id.in_(chunk), User.deleted.is_(False)).order_by(User.id)
        )
        for user in (await session.execute(stmt)).scalars():
            out[user.client_id].append(user)
    return out
