"""docs/portal.md, "Billing", over HTTP on both databases: the addendum browser parses its
query string into the API's query model and answers what the API's list answers (its
filters, its messages, its scope), orders by a column, pages deep; the filtered list as a
streamed CSV equals the API's list; the chart's figures against arranged periods, and
its SVG is well-formed XML."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from cloudadmin.app import create_app
from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import chart, export
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.config import Settings
from cloudadmin.db.models import User
from cloudadmin.portal.csv_export import cell, csv_text_download
from cloudadmin.portal.sections import billing_query
from cloudadmin.web.app_state import app_state
from cloudadmin.web.query_model import QueryModel
from tests.billing.helpers import addendum_row, at, caller, insert_addendums
from tests.factories import auth, make_key
from tests.portal.people import People, sign_in

LIST = "/portal/billing"
API = "/billing/org/v1/addendums"

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


def ids_in(page: str) -> list[int]:
    """The addendum ids of the page's table, in order (its first cells)."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in page else ""
    return [int(found) for found in re.findall(r"<tr>\s*<td>(\d+)</td>", body)]


async def arrange(session: AsyncSession, people: People, count: int = 0) -> list[dict[str, Any]]:
    """Addendums of the first reseller's client and of the other reseller's client."""
    rows = [
        addendum_row(
            people.client_id,
            status=("active", "paused", "stopped", "upcoming")[i % 4],
            product_id=(1, 2, 5)[i % 3],
            plan_name=("Basic", "Größe", "Pro")[i % 3],
            created_at=at(f"2025-0{1 + i % 6}-1{i % 10} 10:00"),
            active_start=at(f"2025-0{1 + i % 6}-01 00:00"),
            reseller_id=people.reseller_id,
        )
        for i in range(count)
    ]
    rows += [
        addendum_row(
            people.other_client_id, reseller_id=people.other_reseller_id, plan_name="Theirs"
        )
        for _ in range(3)
    ]
    await insert_addendums(session, rows)
    return rows


async def operator_token(session: AsyncSession, people: People) -> str:
    user = await session.get(User, people.user_ids["operator"])
    assert user is not None
    token = await make_key(session, user)
    await session.commit()
    return token


async def api_ids(client: httpx.AsyncClient, token: str, params: Any) -> list[int]:
    """Every id the API lists for ``params``, page after page."""
    ids: list[int] = []
    offset = 0
    while True:
        r = await client.get(
            API, params=[*params, ("limit", 100), ("offset", offset)], headers=auth(token)
        )
        assert r.status_code == 200, r.text
        body = r.json()
        ids += [item["id"] for item in body["results"]]
        if not body["next"]:
            return ids
        offset += 100


class TestBrowser:
    async def test_the_page_lists_what_the_api_lists_for_the_same_filters(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await arrange(session, people, 30)
        token = await operator_token(session, people)
        await sign_in(client, people.emails["operator"])
        for params in (
            [],
            [("status", "active"), ("status", "paused")],
            [("client_id", str(people.client_id)), ("product_internal_name", "CDN")],
            [("plan_name", "GRÖSSE")],
            [("created_after", "2025-03-01"), ("ordering", "-created_at")],
            [("active_at", "2025-04-15T00:00:00Z")],
            [("company_name", "")],  # an empty field is no filter
        ):
            page = await client.get(LIST, params=[*params, ("limit", "100")])
            assert page.status_code == 200, page.text
            wanted = [(k, v) for k, v in params if v]
            assert ids_in(page.text) == await api_ids(client, token, wanted), params

    async def test_several_ids_in_one_field_are_the_apis_repeated_parameter(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        rows = await arrange(session, people, 4)
        await sign_in(client, people.emails["operator"])
        both = f"{people.client_id}, {people.other_client_id}"
        page = await client.get(LIST, params={"client_id": both, "limit": "100"})
        assert sorted(ids_in(page.text)) == sorted(r["id"] for r in rows)
        assert f'value="{both}"' in page.text  # the field keeps what was typed

    async def test_the_account_pages_link_gives_one_clients_addendums(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        rows = await arrange(session, people, 5)
        await sign_in(client, people.emails["operator"])
        page = await client.get(f"{LIST}?client_id={people.client_id}")
        assert page.status_code == 200
        assert ids_in(page.text) == [r["id"] for r in rows[:5]]
        assert "5 addendums" in page.text

    async def test_the_table_is_ascii_with_other_characters_as_references(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        # docs/portal.md, "What a page costs": one character past U+00FF would make the
        # whole page two bytes a character in Python.
        await arrange(session, people, 3)
        await sign_in(client, people.emails["operator"])
        page = await client.get(LIST, params={"plan_name": "Größe"})
        assert page.status_code == 200
        table = page.text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
        assert table.isascii()
        assert len(ids_in(page.text)) == 1 and "<td>Gr&#246;&#223;e</td>" in table
        part = await client.get(LIST, params={"plan_name": "Größe"}, headers={"HX-Request": "true"})
        assert part.text.isascii() and "<td>Gr&#246;&#223;e</td>" in part.text

    @pytest.mark.parametrize(
        ("params", "field", "message"),
        [
            ({"client_id": "abc"}, "client_id", "is not a whole number"),
            ({"status": "deleted"}, "status", "is not one of"),
            ({"active_at": "2025-05-15"}, "active_at", ""),
            ({"limit": "101"}, "limit", "less than or equal to 100"),
            ({"ordering": "colour"}, "ordering", "Unknown ordering field"),
            ({"payer_id": "NULL"}, "payer_id", "or null"),
        ],
    )
    async def test_a_bad_filter_is_the_page_with_the_fields_message(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        params: dict[str, str],
        field: str,
        message: str,
    ):
        await arrange(session, people, 2)
        token = await operator_token(session, people)
        await sign_in(client, people.emails["operator"])
        api = await client.get(API, params=params, headers=auth(token))
        assert api.status_code == 400 and field in api.json()["errors"]
        page = await client.get(LIST, params=params)
        assert page.status_code == 400
        shown = 'role="alert"' if field == "ordering" else f'id="e-{field}"'  # no field of its own
        assert shown in page.text and message in page.text
        assert "Correct the filters" in page.text and "<tbody>" not in page.text
        typed = next(iter(params.values()))
        assert f'value="{typed}"' in page.text or "selected" in page.text

    async def test_a_refused_htmx_filter_loads_the_whole_page(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["operator"])
        r = await client.get(LIST, params={"client_id": "x"}, headers={"HX-Request": "true"})
        assert r.status_code == 400
        assert r.headers["HX-Redirect"].endswith("/portal/billing?client_id=x")

    async def test_htmx_gets_the_results_only_and_a_history_restore_the_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await arrange(session, people, 2)
        await sign_in(client, people.emails["operator"])
        part = await client.get(LIST, headers={"HX-Request": "true"})
        assert part.text.lstrip().startswith('<div id="billing-results"')
        whole = await client.get(
            LIST, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
        )
        assert "<h1>" in whole.text and "<html" in whole.text

    async def test_clicking_a_column_head_orders_by_it(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        rows = await arrange(session, people, 12)
        await sign_in(client, people.emails["operator"])
        page = await client.get(LIST)
        head = re.search(r'<a href="([^"]*ordering=created_at[^"]*)">Created', page.text)
        assert head, page.text
        link = head.group(1).replace("&amp;", "&")
        ordered = await client.get(link)
        mine = sorted(rows, key=lambda r: (r["created_at"], r["id"]))
        assert ids_in(ordered.text) == [r["id"] for r in mine]
        assert 'aria-sort="ascending"' in ordered.text
        # The same head again: descending.
        again = re.search(r'<a href="([^"]*ordering=-created_at[^"]*)">Created', ordered.text)
        assert again
        descending = await client.get(again.group(1).replace("&amp;", "&"))
        by_time_desc = sorted(rows, key=lambda r: (-r["created_at"].timestamp(), r["id"]))
        assert ids_in(descending.text) == [r["id"] for r in by_time_desc]

    async def test_pages_next_last_and_a_deep_page_by_number(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        rows = await arrange(session, people, 47)
        everything = sorted(r["id"] for r in rows)
        await sign_in(client, people.emails["operator"])
        first = await client.get(
            LIST, params={"limit": "10", "status": ["active", "paused", "stopped", "upcoming"]}
        )
        assert ids_in(first.text) == everything[:10]
        assert "page 1 of 5" in first.text
        nxt = re.search(r'<a href="([^"]+)" rel="next">', first.text)
        assert nxt and nxt.group(1).startswith("/portal/billing?")
        second = await client.get(nxt.group(1).replace("&amp;", "&"))
        assert ids_in(second.text) == everything[10:20]
        last = re.search(r'<a href="([^"]+)">Last</a>', first.text)
        assert last
        final = await client.get(last.group(1).replace("&amp;", "&"))
        assert ids_in(final.text) == everything[40:]
        assert "page 5 of 5" in final.text
        # "Go to page": the page number is the offset of that page.
        deep = await client.get(LIST, params={"limit": "10", "page": "4"})
        assert ids_in(deep.text) == everything[30:40]
        past = await client.get(LIST, params={"limit": "10", "offset": "1000"})
        assert past.status_code == 200 and ids_in(past.text) == []
        assert "To the first page" in past.text
        bad = await client.get(LIST, params={"page": "0"})
        assert bad.status_code == 400 and "The page (page): A page number" in bad.text

    async def test_a_reseller_sees_its_clients_addendums_and_nothing_of_another_tenant(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        rows = await arrange(session, people, 3)
        theirs = [r["id"] for r in rows[3:]]
        await sign_in(client, people.emails["reseller"])
        page = await client.get(LIST, params={"limit": "100"})
        assert ids_in(page.text) == [r["id"] for r in rows[:3]]
        other = await client.get(LIST, params={"client_id": people.other_client_id})
        assert other.status_code == 200 and ids_in(other.text) == []
        assert "Theirs" not in other.text and "0 addendums" in other.text
        by_id = await client.get(LIST, params={"id": theirs[0]})
        assert ids_in(by_id.text) == []
        csv_text = (
            await client.get(f"{LIST}/export.csv", params={"client_id": people.other_client_id})
        ).text
        assert csv_text.count("\r\n") == 1  # the header alone
        figures = await client.get(f"{LIST}/chart", params={"client_id": people.other_client_id})
        assert "Theirs" not in figures.text and "No addendum was active" in figures.text

    @pytest.mark.parametrize(("kind", "status"), [("seller", 404), ("client", 403)])
    async def test_a_seller_and_a_client_user_get_no_billing(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        kind: str,
        status: int,
    ):
        await arrange(session, people, 2)
        await sign_in(client, people.emails[kind])
        for path in ("", "/export.csv", "/chart", "/chart.svg"):
            r = await client.get(LIST + path)
            assert r.status_code == status and "<tbody>" not in r.text, path

    async def test_without_a_session_the_page_sends_to_sign_in(
        self, client: httpx.AsyncClient, people: People
    ):
        r = await client.get(LIST)
        assert (
            r.status_code == 303
            and "/portal/sign-in?next=%2Fportal%2Fbilling" in r.headers["location"]
        )


class TestCsv:
    async def test_the_csv_is_the_apis_list_for_the_same_filter(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await arrange(session, people, 30)
        # Text a spreadsheet would run is written with an apostrophe; an open end is empty.
        await insert_addendums(
            session,
            [
                addendum_row(people.client_id, plan_name='Say "hi", then\r\nnext; -1'),
                addendum_row(
                    people.client_id,
                    plan_name="=HYPERLINK(1)",
                    active_end=at("2025-09-01 00:00").replace(microsecond=250),
                    created_at=at("2025-02-03 04:05"),
                ),
            ],
        )
        token = await operator_token(session, people)
        await sign_in(client, people.emails["operator"])
        for params in (
            [],
            [("status", "active"), ("status", "stopped"), ("ordering", "-product_name")],
            [("plan_name", "=hyper")],
        ):
            r = await client.get(f"{LIST}/export.csv", params=params)
            assert r.status_code == 200
            assert r.headers["content-type"] == "text/csv; charset=utf-8"
            assert r.headers["content-disposition"].startswith(
                "attachment; filename*=UTF-8''addendums-"
            )
            lines = list(csv.reader(io.StringIO(r.text)))
            assert lines[0] == list(export.HEADER)
            expected = [
                [str(cell(v)) for v in _flat(item)]
                for item in await api_items(client, token, params)
            ]
            assert lines[1:] == expected, params

    async def test_the_stream_hands_over_lines_in_batches_in_the_lists_order_and_scope(
        self, session: AsyncSession, people: People, monkeypatch: pytest.MonkeyPatch
    ):
        rows = await arrange(session, people, 20)
        monkeypatch.setattr(export, "BATCH_ROWS", 7)
        reseller = Caller(
            user_id=people.user_ids["reseller"],
            user_email=people.emails["reseller"],
            superuser=False,
            group_ids=frozenset({1}),
            key_id=None,
            account_id=people.reseller_id,
            account_type="reseller",
            account_reseller_id=None,
        )
        q = AddendumQuery(ordering=["-created_at"], limit=1, offset=5)  # paging ignored
        conn = await session.connection()
        chunks = [chunk async for chunk in export.stream_csv_lines(conn, reseller, q)]
        await session.commit()
        assert [chunk.count("\r\n") for chunk in chunks] == [7, 7, 6]  # the reseller's 20
        lines = list(csv.reader(io.StringIO("".join(chunks))))
        mine = sorted(rows[:20], key=lambda r: (-r["created_at"].timestamp(), r["id"]))
        assert [int(line[0]) for line in lines] == [r["id"] for r in mine]

    async def test_the_body_comes_in_chunks_and_a_download_stopped_early_gives_back_its_connection(
        self, app: Any, session: AsyncSession, people: People, monkeypatch: pytest.MonkeyPatch
    ):
        await insert_addendums(session, [addendum_row(people.client_id) for _ in range(2_100)])
        monkeypatch.setattr(export, "BATCH_ROWS", 500)
        operator = caller(superuser=True)
        scope = {"type": "http", "app": app, "method": "GET", "path": "/", "headers": []}
        response = csv_text_download(
            Request(scope),
            "a.csv",
            export.HEADER,
            lambda conn: export.stream_csv_lines(conn, operator, AddendumQuery()),
            cursor=True,
        )
        body = response.body_iterator
        assert isinstance(body, AsyncGenerator)
        assert await anext(body) == (",".join(export.HEADER) + "\r\n").encode()
        first = await anext(body)
        assert isinstance(first, bytes) and first.count(b"\r\n") == 500
        pool = app_state(app).engine.pool
        assert pool.checkedout() == 1  # the download's own, its cursor open
        await body.aclose()
        assert pool.checkedout() == 0

    async def test_a_bad_filter_is_the_page_not_a_download(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["operator"])
        r = await client.get(f"{LIST}/export.csv", params={"ordering": "colour"})
        assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
        assert "The order (ordering): Unknown ordering field" in r.text


async def api_items(client: httpx.AsyncClient, token: str, params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    offset = 0
    while True:
        r = await client.get(
            API, params=[*params, ("limit", 100), ("offset", offset)], headers=auth(token)
        )
        body = r.json()
        items += body["results"]
        if not body["next"]:
            return items
        offset += 100


def _flat(item: dict[str, Any]) -> list[Any]:
    """An item of the API's list as the CSV's columns (export.HEADER)."""
    return [
        item["id"],
        item["client_id"],
        item["client"]["company_name"],
        item["status"],
        item["active_range"]["start"],
        item["active_range"]["end"] or "",
        item["created_at"],
        item["currency"]["id"],
        item["currency"]["char_code"],
        item["currency"]["symbol"],
        item["plan"]["id"],
        item["plan"]["name"],
        item["product"]["id"],
        item["product"]["name"],
        item["product"]["internal_name"],
    ]


NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_a_cell_a_spreadsheet_would_run_gets_an_apostrophe_and_instants_are_the_apis():
    assert [cell(v) for v in ("=1+2", "+1", "-x", "@a", "\tx", "plain", 5, None, True)] == [
        "'=1+2",
        "'+1",
        "'-x",
        "'@a",
        "'\tx",
        "plain",
        5,
        "",
        "true",
    ]
    assert cell(datetime(2025, 5, 15, 12, tzinfo=UTC)) == "2025-05-15T12:00:00Z"
    assert cell(datetime(2025, 5, 15, 12, 0, 0, 250, tzinfo=UTC)) == "2025-05-15T12:00:00.000250Z"


class TestChart:
    async def test_the_months_each_addendum_was_active_in(
        self, session: AsyncSession, people: People, dialect: str
    ):
        c = people.client_id
        made = [
            # CDN (product 1): the whole window, never ending.
            addendum_row(c, product_id=1, active_start=at("2020-01-01 00:00")),
            # CDN: Dec 2025 only (ends at Jan's first instant, which is outside).
            addendum_row(
                c,
                product_id=1,
                active_start=at("2025-12-31 23:00"),
                active_end=at("2026-01-01 00:00"),
            ),
            # STORAGE (2): from Oct 2026 on, into the current month.
            addendum_row(
                c,
                product_id=2,
                active_start=at("2026-10-15 00:00"),
                active_end=at("2027-03-01 00:00"),
            ),
            # STORAGE: an empty period (end = start) is never active.
            addendum_row(
                c,
                product_id=2,
                active_start=at("2026-05-01 00:00"),
                active_end=at("2026-05-01 00:00"),
            ),
            # STORAGE: ended before the window (Dec 2025 is its first month).
            addendum_row(
                c,
                product_id=2,
                active_start=at("2025-01-01 00:00"),
                active_end=at("2025-12-01 00:00"),
            ),
            # STORAGE: starts after the window.
            addendum_row(c, product_id=2, active_start=at("2026-12-01 00:00")),
            # DDOS (3): two months, Feb and Mar 2026; the other reseller's client.
            addendum_row(
                people.other_client_id,
                product_id=3,
                reseller_id=people.other_reseller_id,
                active_start=at("2026-02-10 00:00"),
                active_end=at("2026-03-02 00:00"),
            ),
        ]
        await insert_addendums(session, made)

        operator = caller(superuser=True)
        figures = await chart.active_by_month(await session.connection(), operator, now=NOW)
        await session.commit()
        assert figures.months[0].isoformat() == "2025-12-01"
        assert figures.months[-1].isoformat() == "2026-11-01"
        by_name = {p.internal_name: p.counts for p in figures.products}
        assert by_name == {
            "CDN": (2,) + (1,) * 11,
            "STORAGE": (0,) * 10 + (1, 1),
            "DDOS": (0, 0, 1, 1) + (0,) * 8,
        }
        assert figures.totals == (2, 1, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2)
        # Filters narrow it as they narrow the list.
        only_cdn = await chart.active_by_month(
            await session.connection(), operator, AddendumQuery(product_id=[1]), now=NOW
        )
        await session.commit()
        assert [p.internal_name for p in only_cdn.products] == ["CDN"]

    async def test_the_chart_page_and_its_svg(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await insert_addendums(
            session,
            [
                addendum_row(
                    people.client_id,
                    product_id=1,
                    product_name='Cdn <b>&amp; "x"',  # escaped in the page and the SVG
                    active_start=at("2020-01-01 00:00"),
                )
            ],
        )
        await sign_in(client, people.emails["operator"])
        page = await client.get(f"{LIST}/chart", params={"client_id": people.client_id})
        assert page.status_code == 200
        assert f'src="/portal/billing/chart.svg?client_id={people.client_id}"' in page.text
        shown = "Cdn &lt;b&gt;&amp;amp; &#34;x&#34;"
        assert re.search(rf'<th scope="row">{shown}</th>\s*(<td>1</td>){{12}}', page.text)
        svg = await client.get(f"{LIST}/chart.svg", params={"client_id": people.client_id})
        assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
        root = ElementTree.fromstring(svg.text)  # well-formed XML
        ns = "{http://www.w3.org/2000/svg}"
        assert root.tag == f"{ns}svg" and root.get("role") == "img"
        assert re.search(r'Cdn <b>&amp; "x": \d{4}-\d\d 1,', root.findtext(f"{ns}desc") or "")
        bars = [r for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
        assert len(bars) == 24  # twelve months, for CDN and for all products
        assert all("style" not in element.attrib for element in root.iter())
        bad = await client.get(f"{LIST}/chart.svg", params={"client_id": "x"})
        assert bad.status_code == 400
        # Every kind of filter goes into the one grouped statement (the name searches'
        # own subqueries on PostgreSQL included).
        for params in ({"plan_name": "basic", "company_name": "company"}, {"plan_name": "zz"}):
            named = await client.get(f"{LIST}/chart", params=params)
            assert named.status_code == 200
            assert ("No addendum was active" in named.text) == (params["plan_name"] == "zz")


def test_the_browsers_list_fields_are_the_query_models():
    assert QueryModel(AddendumQuery)._list_fields == billing_query.LISTS


@pytest.mark.parametrize(
    "query",
    ["", "status=active&product_id=1", "client_id=1,2&limit=50&offset=100&ordering=-id",
     "plan_name=a%20b%26c%3D&limit=25&company_name=%C3%BC%2B"],
)  # fmt: skip
def test_a_column_heads_link_is_the_lists_link_with_that_ordering(query: str):
    from starlette.datastructures import QueryParams

    browse = billing_query.read_browse(QueryParams(query))
    for field in ("id", "-created_at", "client_id", "active_range_start"):
        wanted = browse.link("/portal/billing", offset=None, ordering=field)
        assert browse.ordered_link("/portal/billing", field) == wanted


def test_the_filter_form_is_rendered_once_per_form_and_a_long_one_is_not_kept():
    from starlette.datastructures import QueryParams

    from cloudadmin.portal.sections import billing

    def form_of(query: str) -> Any:
        return billing.filters_form(billing_query.read_browse(QueryParams(query)))

    first = form_of("client_id=1,2&status=active")
    assert form_of("client_id=1,2&status=active&offset=50&ordering=id") is first  # kept
    assert 'value="1, 2"' in first and "checked" in first
    assert form_of("client_id=3") is not first
    long = "company_name=" + "x" * 1000 + "&plan_name=" + "y" * 1001
    assert form_of(long) is not form_of(long)  # rendered each time


async def test_every_billing_page_holds_one_pooled_connection_at_a_time(
    settings: Settings, session: AsyncSession, people: People, dialect: str
):
    # One connection in the pool: a page that took a second one while holding the first
    # would wait out the pool's timeout (503) instead of answering.
    if dialect == "sqlite":
        pytest.skip("SQLite's connections are not a fixed pool (db/engine.py)")
    await insert_addendums(session, [addendum_row(people.client_id) for _ in range(3)])
    await session.close()
    one = settings.model_copy(update={"db_pool_size": 1, "db_pool_timeout": 5.0})
    application = create_app(one)
    transport = httpx.ASGITransport(app=application, client=("203.0.113.7", 40000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            await sign_in(c, people.emails["operator"])
            for path in ("", "?status=active", "/chart", "/chart.svg", "/export.csv"):
                r = await c.get(LIST + path)
                assert r.status_code == 200, (path, r.status_code)
            assert (await c.get(f"{LIST}/export.csv")).text.count("\r\n") == 1 + 3
    finally:
        await app_state(application).engine.dispose()
