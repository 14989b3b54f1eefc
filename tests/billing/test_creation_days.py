"""Creation ranges counted from addendum_days (migration 0011), pages walked between the
days' id bounds: the same answers as the documented semantics, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters
from cloudadmin.billing.addendums import plan as planning
from cloudadmin.billing.addendums.creation_days import creation_range, day_number, day_range
from cloudadmin.billing.addendums.filters import Counter
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.db.models import Addendum
from tests.billing import reference as ref
from tests.billing.helpers import (
    addendum_row,
    at,
    caller,
    days_match_rows,
    insert_addendums,
    listing,
)
from tests.factories import Landscape, landscape

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

FIRST = datetime.min.replace(tzinfo=UTC)


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


class TestDayCounters:
    async def test_counters_follow_inserts_updates_and_deletes(
        self, session: AsyncSession, ls: Landscape
    ):
        instants = [
            "2025-01-01 00:00",
            "2025-01-01 23:59:59.999999",
            "2025-01-02 00:00",
            "2024-12-31 23:59:59.999999",
            "0001-01-01 00:00",
            "9999-12-31 23:59:59.999999",
            "1969-12-31 12:00",
        ]
        rows = [
            addendum_row(ls.client_account.id, id=100 + i, created_at=at(t))
            for i, t in enumerate(instants * 3)
        ]
        await insert_addendums(session, rows)
        await days_match_rows(session)
        await session.execute(
            update(Addendum).where(Addendum.id == 100).values(created_at=at("2030-06-01 12:00"))
        )
        await session.execute(update(Addendum).where(Addendum.id == 101).values(id=9_000_001))
        await session.execute(update(Addendum).where(Addendum.id == 102).values(status="paused"))
        await session.execute(delete(Addendum).where(Addendum.id.in_([103, 110])))
        await session.commit()
        await days_match_rows(session)

    @pytest.mark.postgres
    async def test_truncate_empties_the_counters(
        self, session: AsyncSession, ls: Landscape, database_url: str
    ):
        if not database_url.startswith("postgresql"):
            pytest.skip("TRUNCATE is PostgreSQL's")
        await insert_addendums(session, [addendum_row(ls.client_account.id)])
        await session.execute(text("TRUNCATE addendums"))
        await session.commit()
        assert (await session.execute(text("SELECT count(*) FROM addendum_days"))).scalar() == 0
        await session.commit()


# Rows around the midnights of 2025-05-14..16 and at the ends of time; ids not in
# creation order, so that a day's bounds span ids of other days.
CREATED = [
    "2025-05-14 00:00",
    "2025-05-14 12:00",
    "2025-05-14 23:59:59.999999",
    "2025-05-15 00:00",
    "2025-05-15 00:00:00.000001",
    "2025-05-15 11:59:59",
    "2025-05-15 12:00",
    "2025-05-15 23:59:59.999999",
    "2025-05-16 00:00",
    "2025-05-16 00:00:00.000001",
    "2025-05-17 08:00",
    "0001-01-01 00:00",
    "9999-12-31 23:59:59.999999",
]
IDS = [7, 3, 11, 1, 13, 5, 2, 9, 4, 12, 6, 8, 10]


@pytest.fixture
async def table(session: AsyncSession, ls: Landscape) -> list[dict[str, Any]]:
    rows = [
        addendum_row(ls.client_account.id, id=i, created_at=at(t))
        for i, t in zip(IDS, CREATED, strict=True)
    ]
    await insert_addendums(session, rows)
    return rows


def expected(rows: list[dict[str, Any]], params: dict[str, str]) -> tuple[int, list[int]]:
    return ref.expected(rows, list(params.items()), ref.Viewer("operator"), {}, {})


RANGES = [
    {"created_after": "2025-05-15"},  # midnight itself excluded
    {"created_after": "2025-05-14T23:59:59.999999Z"},
    {"created_after": "2025-05-15T12:00:00Z"},
    {"created_before": "2025-05-15"},
    {"created_before": "2025-05-15 00:00:00.000001"},
    {"created_before": "2025-05-16 00:00:00"},
    {"created_on": "2025-05-15"},
    {"created_on": "2025-05-17"},
    {"created_on": "2025-05-18"},
    {"created_after": "2025-05-14T12:00:00Z", "created_before": "2025-05-16T00:00:00.000001Z"},
    {"created_after": "2025-05-15 11:59:59", "created_before": "2025-05-15 12:00:01"},
    {"created_after": "2025-05-15 12:00:00", "created_before": "2025-05-15 12:00:00"},  # empty
    {"created_after": "2025-05-16", "created_before": "2025-05-15"},  # empty
    {"created_on": "2025-05-15", "created_after": "2025-05-15T00:00:00Z"},
    {"created_on": "2025-05-15", "created_before": "2025-05-15T12:00:00Z"},
    {"created_on": "2025-05-15", "created_after": "2025-05-16"},  # empty
    # the ends of time
    {"created_on": "0001-01-01"},
    {"created_on": "9999-12-31"},
    {"created_before": "0001-01-01"},
    {"created_before": "0001-01-01T00:00:00.000001Z"},
    {"created_after": "9999-12-31T23:59:59.999998Z"},
    {"created_after": "9999-12-31T23:59:59.999999Z"},
    {"created_after": "0001-01-01"},
    {"created_before": "9999-12-31T23:59:59.999999Z"},
]


class TestCreationRangeCounts:
    @pytest.mark.parametrize("params", RANGES)
    async def test_count_and_page_match_the_semantics(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        table: list[dict[str, Any]],
        params: dict[str, str],
    ):
        body = await listing(client, ls.operator, {**params, "limit": 100})
        assert (body["count"], [r["id"] for r in body["results"]]) == expected(table, params)

    @pytest.mark.parametrize("ordering", ["id", "-id", "created_at", "-created_at,id"])
    @pytest.mark.parametrize("plan", [(20_000, 20_000), (0, 0)])  # walk; no walk, no sort
    async def test_every_page(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        table: list[dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch,
        ordering: str,
        plan: tuple[int, int],
    ):
        monkeypatch.setattr(planning, "SORT_AT_MOST", plan[0])
        monkeypatch.setattr(planning, "WALK_AT_MOST", plan[1])
        params = {
            "created_after": "2025-05-14T12:00:00Z",
            "created_before": "2025-05-17",
            "ordering": ordering,
            "limit": "2",
        }
        count, ids = expected(table, {**params, "limit": "100"})
        seen = []
        for offset in range(0, count + 2, 2):
            body = await listing(client, ls.operator, {**params, "offset": str(offset)})
            assert body["count"] == count
            seen += [r["id"] for r in body["results"]]
        assert seen == ids

    async def test_bounds_stay_bounds_after_rows_move_and_go(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        table: list[dict[str, Any]],
    ):
        await session.execute(
            update(Addendum).where(Addendum.id == 5).values(created_at=at("2025-05-16 06:00"))
        )
        await session.execute(update(Addendum).where(Addendum.id == 2).values(id=99))
        await session.execute(delete(Addendum).where(Addendum.id == 1))
        await session.commit()
        moved = {5: at("2025-05-16 06:00")}
        rows = [
            {
                **r,
                "created_at": moved.get(r["id"], r["created_at"]),
                "id": 99 if r["id"] == 2 else r["id"],
            }
            for r in table
            if r["id"] != 1
        ]
        for params in (
            {"created_on": "2025-05-15"},
            {"created_on": "2025-05-16"},
            {"created_after": "2025-05-15", "created_before": "2025-05-17"},
        ):
            body = await listing(client, ls.operator, {**params, "limit": 100})
            assert (body["count"], [r["id"] for r in body["results"]]) == expected(rows, params), (
                params
            )

    async def test_the_last_day_counted_from_rows(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        table: list[dict[str, Any]],
    ):
        # Not the operator, so not the day counters: the filter's own SQL (its day's
        # end is 9999-12-31 23:59:59.999999, not a next day that does not exist).
        for token in (ls.client_member, ls.operator):
            body = await listing(client, token, {"created_on": "9999-12-31", "status": "active"})
            assert [r["id"] for r in body["results"]] == [10]

    def test_other_callers_and_filters_count_rows(self):
        def kind(caller: Caller, **query: Any) -> Counter | None:
            q = AddendumQuery.model_validate(query)
            return counting.counter_for(filters.where(q, caller, "sqlite"), caller)

        operator, reseller = caller(superuser=True), caller(account_type="reseller")
        assert kind(operator, created_on="2025-05-15") is Counter.DAYS
        assert (
            kind(operator, created_after="2025-05-15", created_before="2025-06-01") is Counter.DAYS
        )
        assert kind(operator, created_on="2025-05-15", status=["active"]) is None
        assert kind(reseller, created_on="2025-05-15") is None
        assert kind(operator) is Counter.TOTALS
        assert kind(operator, status=["active"], client_id=["7"]) is Counter.COUNTS
        assert kind(reseller, status=["active"]) is Counter.COUNTS
        assert kind(caller(), status=["active"]) is None


class TestDayRange:
    """creation_days: the range of instants and its days and edges, in Python."""

    def q(self, **params: str) -> AddendumQuery:
        return AddendumQuery.model_validate(params)

    def test_after_is_from_the_next_microsecond_and_before_is_exclusive(self):
        lo, hi = creation_range(self.q(created_after="2025-05-15", created_before="2025-05-16"))
        assert (lo, hi) == (at("2025-05-15 00:00:00.000001"), at("2025-05-16 00:00"))
        days = day_range(lo, hi)
        assert days.first_day == days.last_day == day_number(at("2025-05-15 12:00"))
        assert (days.head_from, days.head_to) == (at("2025-05-15 00:00"), lo)
        assert (days.tail_from, days.tail_last) == (hi, at("2025-05-15 23:59:59.999999"))

    def test_open_sides_have_empty_edges(self):
        days = day_range(None, None)
        assert days.head_from == days.head_to == FIRST
        assert days.tail_from > days.tail_last

    @pytest.mark.parametrize(
        "params",
        [
            {"created_after": "9999-12-31T23:59:59.999999Z"},
            {"created_before": "0001-01-01"},
            {"created_on": "2025-05-15", "created_before": "2025-05-15"},
        ],
    )
    def test_nothing_can_match(self, params: dict[str, str]):
        assert creation_range(self.q(**params)) is None
