"""The page's items as PostgreSQL writes them (billing/addendums/items_json.py) are the
bytes the service writes from the same rows (service._written): any text, any instant,
in every order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.billing.addendums import fields, filters, ordering, repository, service
from cloudadmin.billing.addendums import plan as planning
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.db.models import Addendum, Client
from tests.billing.helpers import addendum_row, caller, insert_addendums, item_paths
from tests.factories import Landscape, landscape

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

OPERATOR = caller(superuser=True)


def text(at_most: int) -> Any:
    """Any text PostgreSQL stores: every control character, quotes and backslashes,
    characters beyond the BMP (no NUL, no lone surrogate)."""
    alphabet = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
    special = st.sampled_from(['"', "\\", "/", "\x01", "\x1f", "\x7f", "\u2028", "é", "😀"])
    return st.lists(st.one_of(special, alphabet), max_size=at_most).map("".join)


# Instants from the first to the last that Python writes, with and without microseconds.
instants = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999_999)
).map(lambda d: d.replace(tzinfo=UTC)) | st.sampled_from(
    [
        datetime.min.replace(tzinfo=UTC),  # stored as -infinity
        datetime.max.replace(tzinfo=UTC),  # stored as infinity
        datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    ]
)


@st.composite
def rows(draw: Any, client_id: int) -> list[dict[str, Any]]:
    ids = draw(st.lists(st.integers(1, 2**63 - 1), min_size=1, max_size=5, unique=True))
    drawn = []
    for id_ in ids:
        drawn.append(
            addendum_row(
                client_id,
                id=id_,
                status=draw(st.sampled_from(["active", "paused", "stopped", "upcoming"])),
                active_start=draw(instants),
                active_end=draw(st.none() | instants),
                created_at=draw(instants),
                currency_symbol=draw(text(5)),
                plan_id=draw(st.integers(-(2**31), 2**31 - 1)),
                plan_name=draw(text(255)),
                product_name=draw(text(255)),
                product_internal_name=draw(text(50)),
            )
        )
    return drawn


ORDERINGS = [
    None,
    ["-id"],
    ["-created_at", "client_id"],
    ["plan_name"],
    ["active_range_end", "-plan_id"],
]


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


class TestItemsWrittenByTheDatabase:
    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    async def test_same_bytes_as_written_from_the_rows(
        self, session: AsyncSession, ls: Landscape, dialect: str, data: st.DataObject
    ):
        if dialect != "postgresql":
            pytest.skip("SQLite's pages are written by the service")
        table = data.draw(rows(ls.client_account.id), label="rows")
        company = data.draw(text(255), label="company_name")
        await session.execute(delete(Addendum))
        await session.execute(
            update(Client).where(Client.id == ls.client_account.id).values(company_name=company)
        )
        await insert_addendums(session, table)
        q = AddendumQuery(ordering=data.draw(st.sampled_from(ORDERINGS), label="ordering"))
        where = filters.where(q, OPERATOR, dialect)
        order = ordering.order_by(q.ordering, dialect)
        conn = await session.connection()
        page = await repository.page(conn, where, order, limit=q.limit, offset=q.offset)
        written = await repository.page_text(conn, where, order, limit=q.limit, offset=q.offset)
        assert len(page) == len(table)
        assert written == service._written(page, None)

    async def test_every_field_of_the_table_is_written(
        self, session: AsyncSession, ls: Landscape, dialect: str
    ):
        """The projection is generated from the field table (fields.py): the items carry
        its wire fields, in its order (status_at_active_at is the service's alone)."""
        if dialect != "postgresql":
            pytest.skip("SQLite's pages are written by the service")
        await session.execute(delete(Addendum))
        await insert_addendums(session, [addendum_row(ls.client_account.id, id=7)])
        q = AddendumQuery()
        where = filters.where(q, OPERATOR, dialect)
        order = ordering.order_by(None, dialect)
        conn = await session.connection()
        written = await repository.page_text(conn, where, order, limit=25, offset=0)
        page = await repository.page(conn, where, order, limit=25, offset=0)
        assert written == service._written(page, None)
        expected = [f.path for f in fields.WIRE if f.origin != fields.COMPUTED]
        assert item_paths(json.loads(written)) == expected

    async def test_an_empty_page_is_no_bytes(self, session: AsyncSession, dialect: str):
        if dialect != "postgresql":
            pytest.skip("SQLite's pages are written by the service")
        await session.execute(delete(Addendum))
        q = AddendumQuery()
        where = filters.where(q, OPERATOR, dialect)
        order = ordering.order_by(None, dialect)
        conn = await session.connection()
        assert await repository.page_text(conn, where, order, limit=25, offset=0) == b""


class TestListWrittenEitherWay:
    async def test_same_answer_with_and_without_the_database_writing(
        self, session: AsyncSession, ls: Landscape, monkeypatch: pytest.MonkeyPatch
    ):
        """The whole answer (count, links, items) is the same bytes when the service
        writes the items itself, as it does on SQLite and with ``active_at``."""
        await insert_addendums(
            session, [addendum_row(ls.client_account.id, id=i) for i in range(1, 31)]
        )
        conn = await session.connection()
        answers = []
        for written_at_most in (planning.WRITTEN_AT_MOST, 0):  # 0: the service writes
            monkeypatch.setattr(planning, "WRITTEN_AT_MOST", written_at_most)
            for params in (
                {},
                {"offset": 25},
                {"offset": 40},
                {"client_id": [ls.client_account.id]},
            ):
                q = AddendumQuery(**params)
                url = URL("http://testserver/billing/org/v1/addendums?x=1")
                answers.append(await service.list_addendums(conn, OPERATOR, q, url=url))
        assert answers[:4] == answers[4:]
        assert b'"count":30' in answers[0] and b'"results":[]' in answers[2]


class TestWhoWritesTheItems:
    """The database writes the items where its share of the request is light (a count
    from the counters, a page near the start); the service writes them otherwise."""

    @pytest.mark.parametrize(
        ("params", "database"),
        [
            ({}, True),
            ({"client_id": ["7"]}, True),
            ({"status": ["active"], "product_id": ["1"]}, True),
            ({"created_after": "2025-01-01", "created_before": "2025-02-01"}, True),
            ({"offset": 975}, True),
            ({"offset": 976}, False),  # 976 + 25 rows past the start
            ({"plan_name": "basic"}, False),  # counted from the rows themselves
            ({"active_at": "2025-01-01T00:00:00Z"}, False),  # its status worked out here
        ],
    )
    def test_by_the_plan(self, params: dict[str, Any], database: bool):
        q = AddendumQuery.model_validate(params)
        assert service.plan(q, OPERATOR, "postgresql").database_writes is database
        assert not service.plan(q, OPERATOR, "sqlite").database_writes
