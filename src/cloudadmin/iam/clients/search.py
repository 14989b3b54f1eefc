"""The Admin Portal's account search (docs/portal.md, "Accounts"): the provider's quick
filters (id, e-mail, name, company, status, seller, test account) on top of the
API's list (listing.py), with its tenancy, its ordering and its caseless matching, and
a page of it with the total count.

The filters the API's list knows are passed to it as a ``ClientListQuery``; the quick
filters it lacks (an id, a part of the e-mail, the account status) are added here. The
matching ids are read in order in one statement, as the API's list does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.iam.clients import listing
from cloudadmin.iam.clients.query import ClientListQuery
from cloudadmin.iam.clients.schemas import AccountStatus
from cloudadmin.iam.clients.schemas import Client as ClientOut
from cloudadmin.iam.clients.service import presented
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.ints import Id32

PAGE_SIZE = 25
MAX_PAGE = 1_000_000
# Columns a person may sort by (the API's ordering fields but created_at).
SORTABLE = ("id", "email", "name", "companyName", "status")
Ordering = Literal[
    "id", "-id", "email", "-email", "name", "-name", "companyName", "-companyName",
    "status", "-status",
]  # fmt: skip
# Test accounts are hidden unless asked for, as in the provider's Admin Portal.
Shown = Literal["hide", "only", "any"]
# Who may list accounts: the API's list's callers (a reseller; operators always), and a
# seller signed in to the portal where that kind exists.
LISTERS = tuple(kind for kind in CallerKind if kind.value in ("reseller", "seller"))
# Rows fetched at a time by the export's stream.
EXPORT_CHUNK = 1_000


def _blank_is_none(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def _blank_is_default(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


# The filters a preset keeps and a link repeats (not the ordering, not the page).
FILTER_NAMES = ("id", "email", "name", "company", "status", "seller", "test", "deleted")
DEFAULTS: dict[str, Any] = {"test": "hide", "deleted": "hide"}

Text = Annotated[
    Annotated[str, StringConstraints(max_length=255)] | None, BeforeValidator(_blank_is_none)
]
OptionalId = Annotated[Id32 | None, BeforeValidator(_blank_is_none)]


class AccountSearch(BaseModel):
    """The quick filters, the ordering and the page, as a page's query string gives them
    (an empty field is no filter; any other parameter is ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: OptionalId = None
    email: Annotated[
        Annotated[str, StringConstraints(max_length=254)] | None, BeforeValidator(_blank_is_none)
    ] = None
    name: Text = None
    company: Text = None
    status: Annotated[AccountStatus | None, BeforeValidator(_blank_is_none)] = None
    seller: OptionalId = None
    test: Annotated[Shown, BeforeValidator(_blank_is_default)] = "hide"
    deleted: Annotated[Shown, BeforeValidator(_blank_is_default)] = "hide"
    ordering: Annotated[Ordering, BeforeValidator(_blank_is_default)] = "id"
    page: Annotated[int, BeforeValidator(_blank_is_default), Field(ge=1, le=MAX_PAGE)] = 1

    def filters(self) -> dict[str, str]:
        """The filters that differ from the defaults, as query parameters."""
        out: dict[str, str] = {}
        for name in FILTER_NAMES:
            value = getattr(self, name)
            if value is not None and value != DEFAULTS.get(name):
                out[name] = str(value)
        return out

    def list_query(self) -> ClientListQuery:
        """What the API's list filters, as its own query."""
        shown = {"hide": "false", "only": "true", "any": None}
        given = {
            "name": self.name,
            "companyName": self.company,
            "seller_id": self.seller,
            "is_test": {"hide": False, "only": True, "any": None}[self.test],
            "deleted": shown[self.deleted],
            "ordering": [self.ordering],
        }
        return ClientListQuery.model_validate({k: v for k, v in given.items() if v is not None})

    def conditions(self) -> list[ColumnElement[bool]]:
        """The quick filters the API's list lacks, in SQL."""
        out: list[ColumnElement[bool]] = []
        if self.id is not None:
            out.append(Client.id == self.id)
        if self.status is not None:
            out.append(Client.status == self.status)
        return out

    def email_matches(self, email: str | None) -> bool:
        """A part of the account's e-mail, ignoring case as the API's text filters do."""
        return self.email is None or (email is not None and fold(self.email) in fold(email))


def _statement(caller: Caller, search: AccountSearch, dialect: str, columns: Sequence[Any]) -> Any:
    q = search.list_query()
    where = [listing._scope(caller), *listing._sql_conditions(q), *search.conditions()]
    order = listing._order(q, dialect)
    row_columns = [*listing._row_columns(q), *([Client.email] if search.email else [])]
    return q, select(Client.id, *row_columns, *columns).where(*where).order_by(*order)


def _in_python(q: ClientListQuery, search: AccountSearch) -> bool:
    """Whether a filter is matched in Python (caseless text), so that the rows must be
    looked at one by one; without one, every row of the statement matches."""
    return search.email is not None or bool(listing._row_columns(q))


def _matches(q: ClientListQuery, search: AccountSearch, row: Any) -> bool:
    # The row has an e-mail only when the search filters by one (_statement).
    email_ok = search.email is None or search.email_matches(row.email)
    return email_ok and listing._row_matches(q, row)


async def matching_ids(session: AsyncSession, caller: Caller, search: AccountSearch) -> list[int]:
    """Ids of every account ``caller`` may list (the API's list: operators every account,
    a reseller its clients, a seller the clients assigned to it; others 403) that
    ``search`` matches, in its order."""
    require(caller, *LISTERS)
    dialect = session.get_bind().dialect.name
    q, stmt = _statement(caller, search, dialect, ())
    rows = (await session.execute(stmt)).all()
    if _in_python(q, search):
        return [row.id for row in rows if _matches(q, search, row)]
    return [row.id for row in rows]


@dataclass(frozen=True, slots=True)
class AccountPage:
    """One page of a search: its accounts as the API presents them, the total count, and
    the page's number (the last page when the search asked past the end)."""

    accounts: list[ClientOut]
    count: int
    page: int
    pages: int


async def search_page(
    session: AsyncSession, caller: Caller, search: AccountSearch, *, size: int = PAGE_SIZE
) -> AccountPage:
    ids = await matching_ids(session, caller, search)
    pages = max(1, -(-len(ids) // size))
    page = min(search.page, pages)
    wanted = ids[(page - 1) * size : page * size]
    rows = await listing.accounts(session, wanted)
    users = await listing.users_by_account(session, wanted)
    accounts = [presented(row, users.get(row.id, []), caller) for row in rows]
    return AccountPage(accounts, len(ids), page, pages)


# The export's columns: header, then the column each reads.
EXPORT_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("id", Client.id),
    ("email", Client.email),
    ("name", Client.name),
    ("companyName", Client.company_name),
    ("status", Client.status),
    ("seller", Client.seller_id),
    ("reseller", Client.reseller_id),
    ("is_test", Client.is_test),
    ("deleted", Client.deleted),
    ("custom_id", Client.custom_id),
    ("created_at", Client.created_at),
)
EXPORT_HEADER = tuple(name for name, _ in EXPORT_COLUMNS)


async def export_rows(
    conn: AsyncConnection, caller: Caller, search: AccountSearch
) -> AsyncIterator[tuple[Any, ...]]:
    """Every account of the search, in its order, as EXPORT_HEADER's values: streamed
    from the database a chunk at a time (a server-side cursor), so memory stays flat
    whatever the number of accounts. 403 for a caller who may not list accounts."""
    require(caller, *LISTERS)
    columns = [column.label(f"x_{name}") for name, column in EXPORT_COLUMNS]
    q, stmt = _statement(caller, search, conn.dialect.name, columns)
    if conn.dialect.name != "postgresql":
        async for row in _streamed(conn, q, search, stmt):
            yield row
        return
    # asyncpg's cursors live in a transaction, and a read connection has none
    # (autocommit): one snapshot for the whole download. The pool gives the
    # connection back in autocommit.
    await conn.execution_options(isolation_level="REPEATABLE READ")
    async with conn.begin():
        async for row in _streamed(conn, q, search, stmt):
            yield row


async def _streamed(
    conn: AsyncConnection, q: ClientListQuery, search: AccountSearch, stmt: Any
) -> AsyncIterator[tuple[Any, ...]]:
    result = await conn.stream(stmt.execution_options(yield_per=EXPORT_CHUNK))
    look = _in_python(q, search)
    async for row in result:
        if not look or _matches(q, search, row):
            yield tuple(getattr(row, f"x_{name}") for name, _ in EXPORT_COLUMNS)
