"""Property: every page the endpoint serves is the page the reference computes.

Hypothesis draws addendums (instants on a coarse grid, so that boundaries coincide
often; names with non-ASCII letters, % and _), a caller, filters, ordering and a
page; the endpoint's answer is compared with reference.py on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import plan as planning
from cloudadmin.db.models import Addendum
from tests.billing import reference as ref
from tests.billing.helpers import addendum_row, insert_addendums, listing
from tests.factories import Landscape, landscape, make_client, make_key, make_user

PLAN_NAMES = [
    "Basic",
    "BASIC plus",
    "Straße",
    "STRASSE 2",
    "Ärger",
    "ärger x",
    "100% off",
    "a_b",
    "a%b",
    "Ωmega",
    "ωMEGA",
    "İstanbul",
]
PRODUCT_NAMES = ["CDN", "Cdn Pro", "Größe", "GRÖSSE", "x_y"]
COMPANY_NAMES = ["Müller & Söhne", "MÜLLER AG", "50% Corp", "a_b Ltd"]
NEEDLES = ["basic", "ss", "ß", "ÄR", "%", "_", "a_b", "a%", "%_", "ωm", "", "x", "ü", "İ", "i̇"]
STATUSES = ["upcoming", "active", "paused", "stopped"]
PRODUCTS = {1: "CDN", 2: "STORAGE", 10: "DNS"}


class World:
    ls: Landscape
    clients: list[int]
    client_reseller: dict[int, int | None]
    companies: dict[int, str]
    viewers: list[tuple[str, ref.Viewer]]


@pytest.fixture
async def world(session: AsyncSession) -> World:
    w = World()
    w.ls = ls = await landscape(session)
    extra = [
        await make_client(
            session, company_name=COMPANY_NAMES[0], reseller_id=ls.reseller_account.id
        ),
        await make_client(
            session, company_name=COMPANY_NAMES[1], reseller_id=ls.other_reseller_account.id
        ),
        await make_client(session, company_name=COMPANY_NAMES[2]),
        await make_client(session, company_name=COMPANY_NAMES[3]),
    ]
    payer_key = await make_key(session, await make_user(session, extra[2], groups=(2,)))
    await session.commit()
    accounts = [ls.client_account, ls.reseller_account, ls.other_reseller_account, *extra]
    w.clients = [a.id for a in accounts]
    w.client_reseller = {a.id: a.reseller_id for a in accounts}
    w.companies = {a.id: a.company_name for a in accounts}
    w.viewers = [
        (ls.operator, ref.Viewer("operator")),
        (ls.reseller, ref.Viewer("reseller", ls.reseller_account.id)),
        (ls.other_reseller, ref.Viewer("reseller", ls.other_reseller_account.id)),
        (ls.client_member, ref.Viewer("account", ls.client_account.id)),
        (payer_key, ref.Viewer("account", extra[2].id)),
    ]
    return w


def instants(k: int) -> st.SearchStrategy[Any]:
    return st.integers(0, k).map(ref.grid)


@st.composite
def rows(draw: st.DrawFn, clients: list[int], resellers: list[int]) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(6, 16))):
        start = draw(instants(8))
        end = draw(st.one_of(st.none(), instants(8)))
        product_id = draw(st.sampled_from(sorted(PRODUCTS)))
        out.append(
            addendum_row(
                draw(st.sampled_from(clients)),
                id=1000 + i,
                payer_id=draw(st.sampled_from([None, 7, *clients[-2:]])),
                provider_id=draw(st.sampled_from([None, 1, 2])),
                reseller_id=draw(st.sampled_from([None, 0, *resellers])),
                status=draw(st.sampled_from(STATUSES)),
                active_start=start,
                active_end=end,
                created_at=draw(instants(8)) + timedelta(seconds=draw(st.sampled_from([0, 1]))),
                currency_id=draw(st.sampled_from([1, 2])),
                plan_id=draw(st.sampled_from([10, 11, 12])),
                plan_name=draw(st.sampled_from(PLAN_NAMES)),
                product_id=product_id,
                product_name=draw(st.sampled_from(PRODUCT_NAMES)),
            )
        )
    return out


def _instant_text(draw: st.DrawFn, allow_date: bool) -> str:
    t = draw(instants(9))
    forms = ["%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M:%S"] + (["%Y-%m-%d"] if allow_date else [])
    return t.strftime(draw(st.sampled_from(forms)))


@st.composite
def queries(draw: st.DrawFn, clients: list[int], resellers: list[int]) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = []
    choices = {
        "active_at": lambda: _instant_text(draw, False),
        "not_active_at": lambda: _instant_text(draw, False),
        "active_after": lambda: _instant_text(draw, True),
        "active_before": lambda: _instant_text(draw, True),
        "active_start_from": lambda: _instant_text(draw, False),
        "active_start_to": lambda: _instant_text(draw, False),
        "active_end_from": lambda: _instant_text(draw, False),
        "active_end_to": lambda: _instant_text(draw, False),
        "created_after": lambda: _instant_text(draw, True),
        "created_before": lambda: _instant_text(draw, True),
        "created_on": lambda: draw(
            st.sampled_from(["2024-12-31", "2025-01-01", "2025-01-02", "2025-01-03"])
        ),
        "id": lambda: str(draw(st.integers(1000, 1015))),
        "company_name": lambda: draw(st.sampled_from(NEEDLES + ["müller", "COMPANY"])),
        "plan_name": lambda: draw(st.sampled_from(NEEDLES)),
        "product_name": lambda: draw(st.sampled_from(NEEDLES + ["grösse", "GRÖẞE"])),
    }
    lists = {
        "addendum_id": st.integers(1000, 1015).map(str),
        "client_id": st.sampled_from(clients).map(str),
        "payer_id": st.sampled_from(["null", "7", *map(str, clients[-2:])]),
        "provider_id": st.sampled_from(["1", "2", "3"]),
        "reseller_id": st.sampled_from(["null", "0", *map(str, resellers)]),
        "plan_id": st.sampled_from(["10", "11", "12"]),
        "product_id": st.sampled_from(["1", "2", "10", "5"]),
        "currency_id": st.sampled_from(["1", "2"]),
        "currency_char_code": st.sampled_from(["USD", "EUR"]),
        "product_internal_name": st.sampled_from(["CDN", "STORAGE", "DNS", "CLOUD"]),
        "status": st.sampled_from(STATUSES),
    }
    names = draw(
        st.lists(
            st.sampled_from(sorted(choices) + sorted(lists)), min_size=1, max_size=3, unique=True
        )
    )
    for name in names:
        if name in choices:
            params.append((name, choices[name]()))
        else:
            for value in draw(st.lists(lists[name], min_size=1, max_size=3)):
                params.append((name, value))
    fields = [
        "created_at",
        "active_range_start",
        "active_range_end",
        "id",
        "client_id",
        "plan_name",
        "plan_id",
        "product_name",
        "product_id",
    ]
    order = draw(
        st.lists(
            st.sampled_from(fields).flatmap(lambda f: st.sampled_from([f, "-" + f])), max_size=3
        )
    )
    if order:
        if draw(st.booleans()):
            params.append(("ordering", ",".join(order)))
        else:
            params += [("ordering", o) for o in order]
    params.append(("limit", str(draw(st.sampled_from([1, 2, 3, 5, 100])))))
    params.append(("offset", str(draw(st.integers(0, 8)))))
    return params


def draw_plan(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    """How a page is read (sorted from the filters' indexes, walked in id order, or left
    to the planner) depends on thresholds far above these tables: drawn."""
    sort_at_most, walk_at_most = data.draw(
        st.sampled_from([(20_000, 20_000), (0, 10**9), (0, 0)]), label="plan"
    )
    monkeypatch.setattr(planning, "SORT_AT_MOST", sort_at_most)
    monkeypatch.setattr(planning, "WALK_AT_MOST", walk_at_most)


def examples(n: int) -> Any:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
class TestAgainstReference:
    @examples(35)
    @given(data=st.data())
    async def test_pages_match_the_reference(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        data: st.DataObject,
        monkeypatch: pytest.MonkeyPatch,
    ):
        draw_plan(data, monkeypatch)
        resellers = [world.ls.reseller_account.id, world.ls.other_reseller_account.id]
        table = data.draw(rows(world.clients, resellers), label="rows")
        await session.execute(delete(Addendum))
        await insert_addendums(session, table)
        for _ in range(3):
            token, viewer = data.draw(st.sampled_from(world.viewers), label="caller")
            params = data.draw(queries(world.clients, resellers), label="query")
            count, ids = ref.expected(table, params, viewer, world.client_reseller, world.companies)
            body = await listing(client, token, params)
            assert (body["count"], [r["id"] for r in body["results"]]) == (count, ids), params
            limit = int(dict(params)["limit"])
            offset = int(dict(params)["offset"])
            assert (body["next"] is not None) == (offset + limit < count)
            assert (body["previous"] is not None) == (offset > 0)
            assert all(
                "status_at_active_at" not in item
                for item in body["results"]
                if "active_at" not in dict(params)
            )
        # status_at_active_at of every row, at an instant on the grid (often a boundary)
        t = data.draw(instants(9), label="active_at")
        body = await listing(
            client, world.ls.operator, {"active_at": t.strftime("%Y-%m-%d %H:%M:%S"), "limit": 100}
        )
        by_id = {r["id"]: r for r in table}
        assert body["count"] == sum(ref.is_active(r, t) for r in table)
        for item in body["results"]:
            assert item["status_at_active_at"] == ref.status_at(by_id[item["id"]], t)
        unfiltered = await listing(client, world.ls.operator, {"limit": 100})
        assert [r["id"] for r in unfiltered["results"]] == sorted(by_id)


@st.composite
def created_rows(draw: st.DrawFn, client_id: int) -> list[dict[str, Any]]:
    """Creation instants on and beside the grid's midnights, ids in any order: a day's id
    bounds then span other days' ids."""
    n = draw(st.integers(1, 16))
    ids = draw(st.permutations(range(1000, 1000 + n)))
    offsets = [
        timedelta(0),
        timedelta(microseconds=1),
        timedelta(microseconds=-1),
        timedelta(seconds=1),
    ]
    return [
        addendum_row(
            client_id, id=ids[i], created_at=draw(instants(12)) + draw(st.sampled_from(offsets))
        )
        for i in range(n)
    ]


@st.composite
def creation_queries(draw: st.DrawFn) -> list[tuple[str, str]]:
    def instant_text() -> str:
        t = draw(instants(13)) + draw(
            st.sampled_from([timedelta(0), timedelta(microseconds=1), timedelta(microseconds=-1)])
        )
        form = draw(st.sampled_from(["%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d"]))
        return t.strftime(form)

    choices = {
        "created_after": instant_text,
        "created_before": instant_text,
        "created_on": lambda: draw(instants(13)).strftime("%Y-%m-%d"),
    }
    names = draw(st.lists(st.sampled_from(sorted(choices)), min_size=1, max_size=3, unique=True))
    params = [(name, choices[name]()) for name in names]
    params.append(("ordering", draw(st.sampled_from(["id", "-id", "created_at,-id"]))))
    params.append(("limit", str(draw(st.sampled_from([1, 2, 5, 100])))))
    params.append(("offset", str(draw(st.integers(0, 6)))))
    return params


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
class TestCreationRangesAgainstReference:
    """The operator's creation ranges, counted from the day counters (creation_days)."""

    @examples(25)
    @given(data=st.data())
    async def test_pages_match_the_reference(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        data: st.DataObject,
        monkeypatch: pytest.MonkeyPatch,
    ):
        draw_plan(data, monkeypatch)
        table = data.draw(created_rows(world.clients[0]), label="rows")
        await session.execute(delete(Addendum))
        await insert_addendums(session, table)
        for _ in range(4):
            params = data.draw(creation_queries(), label="query")
            count, ids = ref.expected(
                table, params, ref.Viewer("operator"), world.client_reseller, world.companies
            )
            body = await listing(client, world.ls.operator, params)
            assert (body["count"], [r["id"] for r in body["results"]]) == (count, ids), params
