"""Reading accounts: GET /iam/clients, /iam/clients/me and /iam/clients/{clientId}."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.factories import (
    Landscape,
    auth,
    landscape,
    make_client,
    make_key,
    make_seller,
    make_user,
)
from tests.iam.accounts_helpers import CLIENT_REQUIRED_KEYS, EMBEDDED_USER_KEYS, SIX_SERVICES

URL = "/iam/clients"
RESELLER_VIEW_ONLY = {"seller", "resellers", "client_type", "owner"}
CALLERS = ("operator", "reseller", "other_reseller", "client_admin", "client_member")


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def get_json(client: httpx.AsyncClient, path: str, token: str, **params: Any) -> Any:
    r = await client.get(path, params=params, headers=auth(token))
    assert r.status_code == 200, r.text
    return r.json()


async def listed_ids(client: httpx.AsyncClient, token: str, **params: Any) -> list[int]:
    return [c["id"] for c in await get_json(client, URL, token, **params)]


class TestGetClient:
    async def test_reseller_reads_its_client_as_patch_shows_it(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        path = f"{URL}/{ls.client_account.id}"
        got = await get_json(client, path, ls.reseller)
        assert set(got) >= CLIENT_REQUIRED_KEYS | {"users", "seller", "resellers", "client_type"}
        assert got["id"] == ls.client_account.id
        assert got["resellers"] == ls.reseller_account.id
        assert set(got["serviceStatuses"]) == SIX_SERVICES
        assert [u["id"] for u in got["users"]] == [ls.admin_user.id, ls.member_user.id]
        assert all(set(u) == EMBEDDED_USER_KEYS for u in got["users"])
        patched = await client.patch(path, json={}, headers=auth(ls.reseller))
        assert got == patched.json()

    @pytest.mark.parametrize(
        ("caller", "account"),
        [
            ("operator", "client_account"),
            ("operator", "other_reseller_account"),
            ("reseller", "client_account"),
            ("reseller", "reseller_account"),
            ("other_reseller", "other_reseller_account"),
            ("client_admin", "client_account"),
            ("client_member", "client_account"),
        ],
    )
    async def test_visible_accounts_are_read(
        self, client: httpx.AsyncClient, ls: Landscape, caller: str, account: str
    ):
        account_id = getattr(ls, account).id
        got = await get_json(client, f"{URL}/{account_id}", getattr(ls, caller))
        assert got["id"] == account_id

    @pytest.mark.parametrize(
        ("caller", "account"),
        [
            ("other_reseller", "client_account"),
            ("other_reseller", "reseller_account"),
            ("reseller", "other_reseller_account"),
            ("client_admin", "reseller_account"),
            ("client_member", "other_reseller_account"),
        ],
    )
    async def test_another_tenants_account_is_404(
        self, client: httpx.AsyncClient, ls: Landscape, caller: str, account: str
    ):
        r = await client.get(f"{URL}/{getattr(ls, account).id}", headers=auth(getattr(ls, caller)))
        assert r.status_code == 404
        assert r.json()["message"] == "Account not found."

    async def test_deleted_and_missing_accounts_are_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        gone = await make_client(session, reseller_id=ls.reseller_account.id, deleted=True)
        await session.commit()
        for account_id in (gone.id, 2**31 - 1):
            r = await client.get(f"{URL}/{account_id}", headers=auth(ls.operator))
            assert r.status_code == 404
            assert r.json()["message"] == "Account not found."

    @pytest.mark.parametrize("bad", ["x", "0", "-1", "1.5", str(2**31)])
    async def test_bad_id_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, bad: str
    ):
        r = await client.get(f"{URL}/{bad}", headers=auth(ls.operator))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["clientId"]

    async def test_anonymous_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(f"{URL}/{ls.client_account.id}")).status_code == 401


class TestMe:
    @pytest.mark.parametrize(
        ("caller", "account", "user"),
        [
            ("reseller", "reseller_account", None),
            ("client_admin", "client_account", "admin_user"),
            ("client_member", "client_account", "member_user"),
        ],
    )
    async def test_every_caller_reads_its_own_account(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        caller: str,
        account: str,
        user: str | None,
    ):
        got = await get_json(client, f"{URL}/me", getattr(ls, caller))
        assert got["id"] == getattr(ls, account).id
        assert set(got) >= CLIENT_REQUIRED_KEYS
        if user is not None:
            assert got["currentUser"] == getattr(ls, user).id

    async def test_the_account_without_who_sells_it(self, client: httpx.AsyncClient, ls: Landscape):
        me = await get_json(client, f"{URL}/me", ls.client_member)
        assert not set(me) & RESELLER_VIEW_ONLY
        full = await get_json(client, f"{URL}/{ls.client_account.id}", ls.client_member)
        assert me == {k: v for k, v in full.items() if k not in RESELLER_VIEW_ONLY}

    async def test_operator_reads_its_home_account(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        home = await make_client(session, client_type="reseller")
        token = await make_key(session, await make_user(session, home, superuser=True))
        await session.commit()
        assert (await get_json(client, f"{URL}/me", token))["id"] == home.id

    async def test_anonymous_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(f"{URL}/me")).status_code == 401


@pytest.fixture
async def accounts(session: AsyncSession, ls: Landscape) -> dict[str, int]:
    """The reseller's clients, each made to match some filters: name -> id."""
    seller = await make_seller(session, ls.reseller_account)
    zeta = await make_client(
        session,
        reseller_id=ls.reseller_account.id,
        company_name="Zeta Shop",
        name="Ärger Ölbaum",
        custom_id="crm-1",
        is_test=True,
        bill_type="prepaid",
        country_code="DE",
        seller_id=seller.id,
        service_statuses={"CDN": {"status": "active", "enabled": True}},
        paid_features={"CDN": [{"feature_id": 7, "name": "Geo", "service": "CDN"}]},
        service_availability={"DNS": True, "CDN": False},
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    zeta.email = "Sales@Zeta.example"
    await make_user(session, zeta, name="Jane Roe", email="jane@zeta.example")
    gone = await make_client(
        session, reseller_id=ls.reseller_account.id, company_name="Deleted Co", deleted=True
    )
    idle = await make_client(
        session, reseller_id=ls.reseller_account.id, company_name="Idle Ltd", client_type="sales"
    )
    await make_user(session, idle, activated=False, name="Idle Ida")
    await make_user(session, idle, deleted=True, name="Jane Ghost")
    await session.commit()
    return {"own": ls.client_account.id, "zeta": zeta.id, "gone": gone.id, "idle": idle.id}


ALL = {"own", "zeta", "gone", "idle"}
FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({}, ALL),
    ({"deleted": "true"}, {"gone"}),
    ({"deleted": "false"}, ALL - {"gone"}),
    ({"deleted": "either"}, ALL),
    ({"email": "sales@ZETA.example"}, {"zeta"}),
    ({"email": "ales@zeta.example"}, set()),
    ({"companyName": "zeta s"}, {"zeta"}),
    ({"name": "ÄRGER ÖL"}, {"zeta"}),
    ({"custom_id": "crm-1"}, {"zeta"}),
    ({"custom_id": "crm"}, set()),
    ({"seller_id": "{seller}"}, {"zeta"}),
    ({"cdn": "active"}, {"zeta"}),
    ({"cdn": "new"}, ALL - {"zeta"}),
    ({"dns": "new"}, ALL),
    ({"storage": "trial"}, set()),
    ({"infrastructure_protection": "new"}, set()),
    ({"connect": "active"}, set()),
    ({"min_traffic": "0"}, set()),
    ({"max_traffic": "1e9"}, set()),
    ({"secondaryhostnames": "cdn.example"}, set()),
    ({"promocode": "SPRING"}, set()),
    ({"activated": "true"}, {"own", "zeta"}),
    ({"activated": "false"}, {"gone", "idle"}),
    ({"id__in__exclude": "{zeta},{gone}"}, {"own", "idle"}),
    ({"bill_type": "prepaid"}, {"zeta"}),
    ({"users_name": "jane"}, {"zeta"}),
    ({"users_email": "ZETA.example"}, {"zeta"}),
    ({"users_name": "ida", "users_email": "example"}, {"idle"}),
    ({"created_at_lte": "2025-06-01T00:00:00Z"}, {"zeta"}),
    ({"created_at_gte": "2025-06-01 00:00:00"}, ALL - {"zeta"}),
    ({"feature_id_in": "3,7"}, {"zeta"}),
    ({"feature_id_in": "3"}, set()),
    ({"is_test": "true"}, {"zeta"}),
    ({"is_test": "false"}, ALL - {"zeta"}),
    ({"client_type": "sales"}, {"idle"}),
    ({"personal_product_availability": "CDN,DNS"}, {"zeta"}),
    ({"personal_product_availability": "CDN"}, set()),
    ({"country_code": "de"}, {"zeta"}),
    ({"country_code": "null"}, ALL - {"zeta"}),
    ({"cdn": "new", "activated": "true"}, {"own"}),
]


def _resolve(params: dict[str, Any], ids: dict[str, int], seller: int) -> dict[str, Any]:
    """``{zeta}`` -> the id of that account, ``{seller}`` -> the seller's."""
    return {key: value.format(**ids, seller=seller) for key, value in params.items()}


class TestListClients:
    async def test_reseller_lists_its_clients_as_an_array(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        got = await get_json(client, URL, ls.reseller)
        assert isinstance(got, list)
        assert [c["id"] for c in got] == sorted(accounts.values())
        own = next(c for c in got if c["id"] == ls.client_account.id)
        assert own == await get_json(client, f"{URL}/{own['id']}", ls.reseller)

    async def test_operator_lists_every_account(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        got = await listed_ids(client, ls.operator)
        assert set(got) >= set(accounts.values()) | {
            ls.reseller_account.id,
            ls.other_reseller_account.id,
        }
        assert got == sorted(got)

    async def test_other_reseller_sees_none_of_them(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        assert await listed_ids(client, ls.other_reseller) == []
        assert await listed_ids(client, ls.other_reseller, reseller_id=ls.reseller_account.id) == []

    @pytest.mark.parametrize("caller", ["client_admin", "client_member"])
    async def test_client_accounts_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, caller: str
    ):
        r = await client.get(URL, headers=auth(getattr(ls, caller)))
        assert r.status_code == 403

    async def test_anonymous_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(URL)).status_code == 401

    @pytest.mark.parametrize(
        ("params", "expected"), FILTERS, ids=[str(sorted(p.items())) for p, _ in FILTERS]
    )
    async def test_filter(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        accounts: dict[str, int],
        params: dict[str, Any],
        expected: set[str],
    ):
        seller = (await get_json(client, f"{URL}/{accounts['zeta']}", ls.reseller))["seller"]
        got = await listed_ids(client, ls.reseller, **_resolve(params, accounts, seller))
        assert got == sorted(accounts[name] for name in expected)

    async def test_reseller_id_filter(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        mine = await listed_ids(client, ls.operator, reseller_id=ls.reseller_account.id)
        assert mine == sorted(accounts.values())

    @pytest.mark.parametrize(
        ("ordering", "expected"),
        [
            ("-companyName", ["zeta", "idle", "gone", "own"]),
            ("companyName", ["own", "gone", "idle", "zeta"]),
            ("name", ["zeta", "own", "gone", "idle"]),
            ("-name", ["own", "gone", "idle", "zeta"]),
            ("-id", ["idle", "gone", "zeta", "own"]),
            # Code point order: "Sales@…" before "account…@…".
            ("email,-created_at", ["zeta", "own", "gone", "idle"]),
            ("status,-id", ["idle", "gone", "zeta", "own"]),
        ],
    )
    async def test_ordering(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        accounts: dict[str, int],
        ordering: str,
        expected: list[str],
    ):
        got = await listed_ids(client, ls.reseller, ordering=ordering)
        assert got == [accounts[name] for name in expected]

    @pytest.mark.parametrize(
        ("param", "value"),
        [
            ("limit", "0"),
            ("limit", "1001"),
            ("limit", "x"),
            ("offset", "-1"),
            ("offset", str(2**63)),
            ("ordering", "website"),
            ("email", "nope"),
            ("reseller_id", "x"),
            ("seller_id", str(2**31)),
            ("cdn", "broken"),
            ("client_type", "partner"),
            ("id__in__exclude", "1,a"),
            ("feature_id_in", "0"),
            ("personal_product_availability", "CDN,FTP"),
            ("country_code", "DEU"),
            ("created_at_gte", "yesterday"),
            ("is_test", "perhaps"),
            ("activated", "2"),
            ("min_traffic", "lots"),
            ("max_traffic", "nan"),
            ("companyName", "c" * 256),
        ],
    )
    async def test_bad_parameter_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, param: str, value: str
    ):
        r = await client.get(URL, params={param: value}, headers=auth(ls.reseller))
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == [param]

    async def test_too_many_excluded_ids_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        many = ",".join(str(i) for i in range(1, 1002))
        r = await client.get(URL, params={"id__in__exclude": many}, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["id__in__exclude"]

    async def test_repeated_ordering_combines_left_to_right(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        r = await client.get(
            URL, params=[("ordering", "-is_gone"), ("ordering", "-id")], headers=auth(ls.reseller)
        )
        assert r.status_code == 400 and list(r.json()["errors"]) == ["ordering"]
        got = await listed_ids(client, ls.reseller, ordering=["status", "-companyName"])
        assert got == [accounts[name] for name in ("zeta", "idle", "gone", "own")]

    async def test_unknown_parameters_are_refused(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get(URL, params={"colour": "blue"}, headers=auth(ls.reseller))
        assert r.status_code == 400 and list(r.json()["errors"]) == ["colour"]


class TestListPages:
    async def test_limit_gives_a_page_with_links(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        ids = sorted(accounts.values())
        first = await get_json(client, URL, ls.reseller, limit=2, is_test="false")
        # next and previous are always there, null at the ends (as DRF writes them).
        assert set(first) == {"count", "next", "previous", "results"}
        assert first["previous"] is None
        assert first["count"] == 3
        assert [c["id"] for c in first["results"]] == [i for i in ids if i != accounts["zeta"]][:2]
        nxt = urlsplit(first["next"])
        assert parse_qs(nxt.query) == {"limit": ["2"], "offset": ["2"], "is_test": ["false"]}
        second = (await client.get(first["next"], headers=auth(ls.reseller))).json()
        assert [c["id"] for c in second["results"]] == [accounts["idle"]]
        assert second["next"] is None
        assert parse_qs(urlsplit(second["previous"]).query) == {
            "limit": ["2"],
            "is_test": ["false"],
        }

    @pytest.mark.parametrize("offset", [4, 1000, 2**63 - 1])
    async def test_offset_past_the_end_is_an_empty_page(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int], offset: int
    ):
        page = await get_json(client, URL, ls.reseller, limit=10, offset=offset)
        assert page["count"] == 4 and page["results"] == [] and page["next"] is None

    async def test_offset_without_limit_skips_in_the_array(
        self, client: httpx.AsyncClient, ls: Landscape, accounts: dict[str, int]
    ):
        assert await listed_ids(client, ls.reseller, offset=3) == [accounts["idle"]]
        assert await listed_ids(client, ls.reseller, offset=2**63 - 1) == []

    async def test_many_accounts_embed_their_own_users(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        # More accounts than one IN list of listing.CHUNK holds.
        made = []
        for _ in range(520):
            made.append(await make_client(session, reseller_id=ls.other_reseller_account.id))
        await make_user(session, made[-1], name="Last")
        await session.commit()
        got = await get_json(client, URL, ls.other_reseller)
        assert [c["id"] for c in got] == [a.id for a in made]
        assert [u["name"] for u in got[-1]["users"]] == ["Last"]
        assert all(c["users"] == [] for c in got[:-1])


class TestOpenApi:
    async def test_documented_as_the_provider_does(self, client: httpx.AsyncClient):
        doc = (await client.get("/openapi.json")).json()
        paths = doc["paths"]

        def schema(path: str) -> Any:
            return paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]

        assert schema(f"{URL}/me") == {"$ref": "#/components/schemas/ClientBase"}
        assert schema(URL + "/{clientId}") == {"$ref": "#/components/schemas/Client"}
        assert {"type": "array", "items": {"$ref": "#/components/schemas/Client"}} in schema(URL)[
            "anyOf"
        ]
        names = {p["name"] for p in paths[URL]["get"]["parameters"]}
        assert names >= {
            "limit",
            "offset",
            "ordering",
            "email",
            "companyName",
            "deleted",
            "reseller_id",
            "cdn",
            "connect",
            "id__in__exclude",
            "users_email",
            "created_at_gte",
            "feature_id_in",
            "promocode",
            "country_code",
        }
        assert (
            set(doc["components"]["schemas"]["Client"]["properties"])
            - set(doc["components"]["schemas"]["ClientBase"]["properties"])
            == RESELLER_VIEW_ONLY
        )
