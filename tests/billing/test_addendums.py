"""GET /billing/org/v1/addendums (operation 13): filters, ordering, pages, scoping."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import counting, derive_row
from cloudadmin.db.models import Addendum
from cloudadmin.db.models.billing import AddendumCount, AddendumTotal
from cloudadmin.kit.caseless import fold
from tests.billing.helpers import URL, addendum_row, at, ids_of, insert_addendums, listing
from tests.factories import Landscape, auth, landscape, make_client, make_key, make_user

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def one(session: AsyncSession, ls: Landscape, **fields: object) -> int:
    row = addendum_row(ls.client_account.id, **fields)
    await insert_addendums(session, [row])
    return int(row["id"])


async def matches(client: httpx.AsyncClient, ls: Landscape, name: str, value: str) -> bool:
    body = await listing(client, ls.operator, {name: value})
    return body["count"] == 1


class TestActivePeriodBoundaries:
    """Active period [start, end): start 2025-01-01 00:00, end 2025-02-01 00:00."""

    @pytest.fixture
    async def period(self, session: AsyncSession, ls: Landscape) -> None:
        await one(
            session, ls, active_start=at("2025-01-01 00:00"), active_end=at("2025-02-01 00:00")
        )

    @pytest.mark.parametrize(
        ("name", "value", "found"),
        [
            ("active_at", "2024-12-31T23:59:59Z", False),
            ("active_at", "2025-01-01T00:00:00Z", True),  # start is inside
            ("active_at", "2025-01-31 23:59:59", True),
            ("active_at", "2025-02-01 00:00:00", False),  # end is outside
            ("not_active_at", "2024-12-31T23:59:59Z", True),
            ("not_active_at", "2025-01-01T00:00:00Z", False),
            ("not_active_at", "2025-02-01T00:00:00Z", True),
            ("active_after", "2025-01-31T23:59:59Z", True),
            ("active_after", "2025-02-01T00:00:00Z", False),
            ("active_after", "2025-01-31", True),  # a date: its midnight
            ("active_after", "2025-02-01", False),
            ("active_before", "2025-01-01T00:00:00Z", False),
            ("active_before", "2025-01-01T00:00:01Z", True),
            ("active_before", "2025-01-02", True),
            ("active_start_from", "2025-01-01T00:00:00Z", True),  # on or after
            ("active_start_from", "2025-01-01T00:00:01Z", False),
            ("active_start_to", "2025-01-01T00:00:00Z", True),  # on or before
            ("active_start_to", "2024-12-31T23:59:59Z", False),
            ("active_end_from", "2025-02-01T00:00:00Z", True),
            ("active_end_from", "2025-02-01T00:00:01Z", False),
            ("active_end_to", "2025-02-01T00:00:00Z", True),
            ("active_end_to", "2025-01-31T23:59:59Z", False),
        ],
    )
    async def test_boundary(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        period: None,
        name: str,
        value: str,
        found: bool,
    ):
        assert await matches(client, ls, name, value) is found


class TestOpenEndedPeriod:
    """end null: the period never ends (+infinity)."""

    @pytest.fixture
    async def open_period(self, session: AsyncSession, ls: Landscape) -> None:
        await one(session, ls, active_start=at("2025-01-01 00:00"), active_end=None)

    @pytest.mark.parametrize(
        ("name", "value", "found"),
        [
            ("active_at", "9999-12-31T23:59:59Z", True),
            ("not_active_at", "9999-12-31T23:59:59Z", False),
            ("active_after", "9999-12-31", True),
            ("active_end_from", "9999-12-31T23:59:59Z", True),
            ("active_end_to", "9999-12-31T23:59:59Z", False),
        ],
    )
    async def test_open_end(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        open_period: None,
        name: str,
        value: str,
        found: bool,
    ):
        assert await matches(client, ls, name, value) is found


class TestEmptyPeriod:
    async def test_an_empty_period_is_never_active(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await one(
            session, ls, active_start=at("2025-01-01 00:00"), active_end=at("2025-01-01 00:00")
        )
        for name in ("active_at", "active_after", "active_before"):
            assert not await matches(client, ls, name, "2025-01-01T00:00:00Z"), name
        assert await matches(client, ls, "not_active_at", "2025-01-01T00:00:00Z")
        assert not await matches(client, ls, "active_after", "2024-01-01")
        assert not await matches(client, ls, "active_before", "2026-01-01")


class TestCreationBoundaries:
    """created_at 2025-05-15 00:00:00."""

    @pytest.fixture
    async def created(self, session: AsyncSession, ls: Landscape) -> None:
        await one(session, ls, created_at=at("2025-05-15 00:00"))

    @pytest.mark.parametrize(
        ("name", "value", "found"),
        [
            ("created_after", "2025-05-15T00:00:00Z", False),  # strictly after
            ("created_after", "2025-05-14T23:59:59Z", True),
            ("created_after", "2025-05-15", False),  # a date: its midnight
            ("created_after", "2025-05-14", True),
            ("created_before", "2025-05-15 00:00:00", False),  # strictly before
            ("created_before", "2025-05-15 00:00:01", True),
            ("created_before", "2025-05-16", True),
            ("created_on", "2025-05-15", True),
            ("created_on", "2025-05-14", False),
        ],
    )
    async def test_boundary(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        created: None,
        name: str,
        value: str,
        found: bool,
    ):
        assert await matches(client, ls, name, value) is found

    async def test_created_on_is_a_utc_day(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await one(session, ls, created_at=at("2025-05-16 23:59:59.999999"))
        await one(session, ls, created_at=at("2025-05-17 00:00"))
        assert (await listing(client, ls.operator, {"created_on": "2025-05-16"}))["count"] == 1


class TestInstantFormats:
    @pytest.mark.parametrize(
        "value",
        [
            "2025-05-15T12:00:00Z",
            "2025-05-15 12:00:00",
            "2025-05-15T12:00:00.5Z",
            "2025-05-15T14:00:00%2B02:00",
        ],
    )
    async def test_accepted(self, client: httpx.AsyncClient, ls: Landscape, value: str):
        r = await client.get(f"{URL}?active_at={value}", headers=auth(ls.operator))
        assert r.status_code == 200, r.text

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("active_at", "2025-05-15"),  # a date alone only for the four *_after/_before
            ("not_active_at", "2025-05-15"),
            ("active_start_from", "2025-05-15"),
            ("active_end_to", "2025-05-15"),
            ("active_at", "15/05/2025"),
            ("created_after", "yesterday"),
            ("created_before", "2025-13-01"),
            ("created_on", "2025-05-15T00:00:00Z"),
            ("active_after", ""),
        ],
    )
    async def test_rejected_naming_the_parameter(
        self, client: httpx.AsyncClient, ls: Landscape, name: str, value: str
    ):
        body = await listing(client, ls.operator, {name: value}, status=400)
        assert body["exception_class"] == "ValidationError"
        assert list(body["errors"]) == [name]


class TestArrays:
    async def test_repeated_values_are_alternatives_and_filters_combine(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        a = await one(session, ls, status="active", product_id=1)
        b = await one(session, ls, status="paused", product_id=1)
        await one(session, ls, status="stopped", product_id=1)
        await one(session, ls, status="active", product_id=2)
        params = [("status", "active"), ("status", "paused"), ("product_id", "1")]
        assert await ids_of(client, ls.operator, params) == [a, b]
        params = [("status", "active"), ("status", "paused"), ("product_internal_name", "CDN")]
        assert await ids_of(client, ls.operator, params) == [a, b]

    async def test_every_array_filter(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        a = await one(session, ls, plan_id=77, currency_id=2, provider_id=-5)
        await one(session, ls)
        for name, value in [
            ("addendum_id", str(a)),
            ("plan_id", "77"),
            ("currency_id", "2"),
            ("currency_char_code", "EUR"),
            ("provider_id", "-5"),
            ("id", str(a)),
            ("client_id", str(ls.client_account.id)),
        ]:
            found = await ids_of(client, ls.operator, {name: value})
            assert a in found and (len(found) == 1 or name == "client_id"), name

    async def test_null_matches_a_missing_payer_or_reseller(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        none = await one(session, ls, payer_id=None, reseller_id=None)
        some = await one(session, ls, payer_id=42, reseller_id=0)
        other = await one(session, ls, payer_id=43, reseller_id=9)
        assert await ids_of(client, ls.operator, {"payer_id": "null"}) == [none]
        assert await ids_of(client, ls.operator, [("payer_id", "null"), ("payer_id", "42")]) == [
            none,
            some,
        ]
        assert await ids_of(client, ls.operator, {"reseller_id": "null"}) == [none]
        assert await ids_of(client, ls.operator, [("reseller_id", "0"), ("reseller_id", "9")]) == [
            some,
            other,
        ]

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("client_id", "2147483648"),
            ("client_id", "-2147483649"),
            ("client_id", "1.5"),
            ("client_id", "abc"),
            ("client_id", "null"),
            ("client_id", ""),
            ("provider_id", "2147483648"),
            ("reseller_id", "-1"),
            ("reseller_id", "2147483648"),
            ("payer_id", "9223372036854775808"),
            ("payer_id", "NULL"),
            ("addendum_id", "x"),
            ("addendum_id", "0"),
            ("plan_id", "9999999999"),
            ("product_id", "١"),
            ("currency_id", " "),
            ("id", "x"),
            ("id", "0"),
            ("status", "ACTIVE"),
            ("status", "deleted"),
            ("currency_char_code", "usd"),
            ("currency_char_code", "GBP"),
            ("product_internal_name", "cdn"),
            ("limit", "101"),
            ("limit", "0"),
            ("limit", "x"),
            ("offset", "-1"),
            ("ordering", "name"),
            ("ordering", "id,-bogus"),
            ("client", "5"),
        ],
    )
    async def test_bad_values_are_400_naming_the_parameter(
        self, client: httpx.AsyncClient, ls: Landscape, name: str, value: str
    ):
        body = await listing(client, ls.operator, [("client_id", "1"), (name, value)], status=400)
        assert list(body["errors"]) == [name], body


class TestNames:
    @pytest.mark.parametrize(
        ("stored", "needle", "found"),
        [
            ("Premium Plan", "premium", True),
            ("Premium Plan", "UM PL", True),
            ("Straße", "STRASSE", True),  # full case folding
            ("STRASSE", "straße", True),
            ("Ärzte", "äRZ", True),  # non-ASCII letters, both databases
            ("ΣΊΣΥΦΟΣ", "σίσυφος", True),
            ("Größe", "grösse", True),
            ("100% off", "0% o", True),  # % is literal
            ("100 off", "0% o", False),
            ("a_b", "a_b", True),  # _ is literal
            ("axb", "a_b", False),
            ("back\\slash", "k\\s", True),
            ("Basic", "", True),
        ],
    )
    async def test_plan_and_product_names(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        stored: str,
        needle: str,
        found: bool,
    ):
        await one(session, ls, plan_name=stored, product_name=stored)
        assert await matches(client, ls, "plan_name", needle) is found
        assert await matches(client, ls, "product_name", needle) is found

    async def test_company_name_is_the_clients(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        müller = await make_client(session, company_name="Müller_Söhne 100%")
        await session.commit()
        mine = addendum_row(müller.id)
        await insert_addendums(session, [mine, addendum_row(ls.client_account.id)])
        for needle in ("MÜLLER", "r_s", "100%", "söhne"):
            assert await ids_of(client, ls.operator, {"company_name": needle}) == [mine["id"]]
        assert await ids_of(client, ls.operator, {"company_name": "r%s"}) == []
        body = await listing(client, ls.operator, {"company_name": "müller"})
        assert body["results"][0]["client"] == {
            "id": müller.id,
            "company_name": "Müller_Söhne 100%",
        }

    @pytest.mark.parametrize("named_at_most", [counting.NAMED_AT_MOST, 1, 0])
    async def test_company_name_with_client_ids(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        monkeypatch: pytest.MonkeyPatch,
        named_at_most: int,
    ):
        # On PostgreSQL the count finds the clients a search names, and the page reads
        # those clients' addendums instead of searching again (up to NAMED_AT_MOST of
        # them): the answers are the same either way, a client_id filter included.
        monkeypatch.setattr(counting, "NAMED_AT_MOST", named_at_most)
        x = await make_client(session, company_name="Acme X")
        y = await make_client(session, company_name="Acme Y")
        await session.commit()
        rows = [addendum_row(c.id) for c in (x, y, ls.client_account, y, x)]
        await insert_addendums(session, rows)
        of = {c.id: [r["id"] for r in rows if r["client_id"] == c.id] for c in (x, y)}
        both = sorted(of[x.id] + of[y.id])

        async def found(**params: object) -> tuple[int, list[int]]:
            body = await listing(client, ls.operator, {"company_name": "acme", **params})
            return body["count"], [item["id"] for item in body["results"]]

        assert await found() == (4, both)
        assert await found(limit=1, offset=1) == (4, both[1:2])
        assert await found(client_id=x.id) == (2, of[x.id])
        assert await found(client_id=[y.id, ls.client_account.id]) == (2, of[y.id])
        assert await found(client_id=ls.client_account.id) == (0, [])

    async def test_derive_row_fills_the_folded_copies(self):
        row = derive_row({"plan_name": "Straße", "product_name": "ÄX", "id": 1})
        assert row["plan_name_folded"] == "strasse" and row["product_name_folded"] == "äx"
        assert fold("ǅ") == fold("ǆ") == fold("Ǆ")


class TestOrdering:
    @pytest.fixture
    async def three(self, session: AsyncSession, ls: Landscape) -> list[int]:
        rows = [
            addendum_row(
                ls.client_account.id,
                id=3,
                plan_name="beta",
                plan_id=2,
                active_end=None,
                created_at=at("2025-01-02 00:00"),
            ),
            addendum_row(
                ls.client_account.id,
                id=1,
                plan_name="Alpha",
                plan_id=2,
                active_end=at("2025-03-01 00:00"),
                created_at=at("2025-01-02 00:00"),
            ),
            addendum_row(
                ls.client_account.id,
                id=2,
                plan_name="alpha",
                plan_id=1,
                active_end=at("2025-02-01 00:00"),
                created_at=at("2025-01-01 00:00"),
            ),
        ]
        await insert_addendums(session, rows)
        return [1, 2, 3]

    @pytest.mark.parametrize(
        ("ordering", "expected"),
        [
            (None, [1, 2, 3]),
            ("-id", [3, 2, 1]),
            ("plan_id", [2, 1, 3]),
            ("-plan_id", [1, 3, 2]),  # ties completed by id ascending
            ("plan_name", [1, 2, 3]),  # caseless: Alpha, alpha, beta
            ("-plan_name", [3, 2, 1]),
            ("active_range_end", [2, 1, 3]),  # no end = last
            ("-active_range_end", [3, 1, 2]),  # no end = first
            ("-created_at,plan_id", [1, 3, 2]),
            ("created_at,-id", [2, 3, 1]),
        ],
    )
    async def test_orders(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        three: list[int],
        ordering: str | None,
        expected: list[int],
    ):
        params = {"ordering": ordering} if ordering else {}
        assert await ids_of(client, ls.operator, params) == expected

    async def test_repeated_parameters_combine_left_to_right(
        self, client: httpx.AsyncClient, ls: Landscape, three: list[int]
    ):
        params = [("ordering", "-created_at"), ("ordering", "plan_id")]
        assert await ids_of(client, ls.operator, params) == [1, 3, 2]


class TestPages:
    async def test_envelope_and_links_keep_every_other_parameter(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await insert_addendums(session, [addendum_row(ls.client_account.id) for _ in range(5)])
        params = [("status", "active"), ("ordering", "-id"), ("limit", "2")]
        first = await listing(client, ls.operator, params)
        assert first["count"] == 5 and first["previous"] is None
        nxt = urlsplit(first["next"])
        assert nxt.scheme == "http" and nxt.netloc == "testserver"
        assert parse_qs(nxt.query) == {
            "status": ["active"],
            "ordering": ["-id"],
            "limit": ["2"],
            "offset": ["2"],
        }
        seen = [r["id"] for r in first["results"]]
        url: str | None = first["next"]
        while url:
            page = (await client.get(url, headers=auth(ls.operator))).json()
            seen += [r["id"] for r in page["results"]]
            assert page["previous"] is not None
            url = page["next"]
        assert seen == sorted(seen, reverse=True) and len(set(seen)) == 5

    async def test_default_limit_is_25_and_past_the_end_is_empty(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await insert_addendums(session, [addendum_row(ls.client_account.id) for _ in range(30)])
        assert len((await listing(client, ls.operator))["results"]) == 25
        body = await listing(client, ls.operator, {"offset": 40})
        assert body["count"] == 30 and body["results"] == [] and body["next"] is None
        assert len((await listing(client, ls.operator, {"limit": 100}))["results"]) == 30

    async def test_status_at_active_at_only_when_asked(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await one(
            session,
            ls,
            status="upcoming",
            active_start=at("2025-01-01 00:00"),
            active_end=at("2025-02-01 00:00"),
        )
        [item] = (await listing(client, ls.operator))["results"]
        assert "status_at_active_at" not in item
        for t, expected in [("2024-12-31 23:59:59", None), ("2025-01-01 00:00:00", "active")]:
            body = await listing(client, ls.operator, {"active_at": t})
            assert [r["status_at_active_at"] for r in body["results"]] == (
                [expected] if expected else []
            )
        assert item["active_range"] == {
            "start": "2025-01-01T00:00:00Z",
            "end": "2025-02-01T00:00:00Z",
        }


class TestScoping:
    @pytest.fixture
    async def spread(self, session: AsyncSession, ls: Landscape) -> dict[str, int]:
        stranger = await make_client(session, reseller_id=ls.other_reseller_account.id)
        await session.commit()
        rows = {
            "own": addendum_row(ls.client_account.id),
            "paid": addendum_row(stranger.id, payer_id=ls.client_account.id),
            "resold": addendum_row(stranger.id, reseller_id=ls.reseller_account.id),
            "foreign": addendum_row(stranger.id, reseller_id=ls.other_reseller_account.id),
        }
        await insert_addendums(session, list(rows.values()))
        return {k: int(v["id"]) for k, v in rows.items()}

    async def test_operator_sees_all(self, client, ls: Landscape, spread: dict[str, int]):
        assert (await listing(client, ls.operator))["count"] == 4

    async def test_reseller_sees_its_own_and_its_clients(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int]
    ):
        expected = sorted([spread["own"], spread["resold"]])
        assert await ids_of(client, ls.reseller) == expected
        assert (await listing(client, ls.reseller, {"status": "active"}))["count"] == 2
        assert await ids_of(client, ls.other_reseller) == sorted(
            [spread["paid"], spread["resold"], spread["foreign"]]
        )

    @pytest.mark.parametrize("caller", ["client_admin", "client_member"])
    async def test_account_sees_its_own_as_client_or_payer(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int], caller: str
    ):
        assert await ids_of(client, getattr(ls, caller)) == sorted([spread["own"], spread["paid"]])

    async def test_filters_never_widen_the_scope(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int]
    ):
        params = {"addendum_id": spread["foreign"]}
        assert (await listing(client, ls.client_admin, params))["count"] == 0
        assert (await listing(client, ls.reseller, params))["count"] == 0

    async def test_anonymous_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(URL)).status_code == 401


class TestCounters:
    """Counts kept by triggers equal real counts through inserts, upserts and deletes."""

    async def real_and_kept(self, session: AsyncSession) -> tuple[list, list]:
        real = (
            await session.execute(
                text(
                    "SELECT status, product_id, count(*) FROM addendums"
                    " GROUP BY status, product_id ORDER BY 1, 2"
                )
            )
        ).all()
        t = AddendumTotal
        kept = (
            await session.execute(
                select(t.status, t.product_id, func.sum(t.n))
                .group_by(t.status, t.product_id)
                .having(func.sum(t.n) > 0)
                .order_by(t.status, t.product_id)
            )
        ).all()
        await session.commit()  # end the read: SQLite's BEGIN IMMEDIATE would block requests
        return [tuple(r) for r in real], [tuple(r) for r in kept]

    async def test_counts_follow_every_write(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        rows = [
            addendum_row(ls.client_account.id, status=s, product_id=p)
            for s in ("active", "paused")
            for p in (1, 2)
            for _ in range(3)
        ]
        await insert_addendums(session, rows)
        real, kept = await self.real_and_kept(session)
        assert real == kept
        await session.execute(
            update(Addendum)
            .where(Addendum.id == rows[0]["id"])
            .values(status="stopped", product_id=5, reseller_id=3)
        )
        await session.execute(delete(Addendum).where(Addendum.id == rows[1]["id"]))
        await session.commit()
        real, kept = await self.real_and_kept(session)
        assert real == kept
        per_client = (
            await session.execute(
                select(AddendumCount.reseller_key, AddendumCount.n).where(
                    AddendumCount.status == "stopped"
                )
            )
        ).all()
        await session.commit()
        assert [tuple(r) for r in per_client] == [(3, 1)]
        body = await listing(client, ls.operator, [("status", "active"), ("product_id", "1")])
        assert body["count"] == 1  # 3 inserted, one changed, one deleted

    async def test_count_of_a_reseller_with_a_null_reseller_filter(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await insert_addendums(
            session,
            [
                addendum_row(ls.client_account.id, reseller_id=None),
                addendum_row(ls.client_account.id, reseller_id=0),
            ],
        )
        body = await listing(client, ls.reseller, {"reseller_id": "null"})
        assert body["count"] == 1 and len(body["results"]) == 1


class TestMembersOfOtherAccounts:
    async def test_payer_only_account_sees_what_it_pays(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        payer = await make_client(session)
        token = await make_key(session, await make_user(session, payer, groups=(2,)))
        await session.commit()
        paid = addendum_row(ls.client_account.id, payer_id=payer.id)
        await insert_addendums(session, [paid, addendum_row(ls.client_account.id)])
        assert await ids_of(client, token) == [paid["id"]]
