"""GET /billing/org/v1/addendums/{id}: one addendum, seen as the list shows it."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.billing.helpers import URL, addendum_row, at, insert_addendums, listing
from tests.factories import Landscape, auth, landscape, make_client

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


@pytest.fixture
async def spread(session: AsyncSession, ls: Landscape) -> dict[str, int]:
    """The addendums of tests/billing/test_addendums.py TestScoping: one per way of
    being seen."""
    stranger = await make_client(session, reseller_id=ls.other_reseller_account.id)
    await session.commit()
    rows = {
        "own": addendum_row(
            ls.client_account.id,
            active_start=at("2025-01-01 00:00"),
            active_end=at("2025-02-01 00:00"),
            status="upcoming",
        ),
        "paid": addendum_row(stranger.id, payer_id=ls.client_account.id),
        "resold": addendum_row(stranger.id, reseller_id=ls.reseller_account.id),
        "foreign": addendum_row(stranger.id, reseller_id=ls.other_reseller_account.id),
    }
    await insert_addendums(session, list(rows.values()))
    return {k: int(v["id"]) for k, v in rows.items()}


async def get(client: httpx.AsyncClient, token: str, addendum_id: object) -> httpx.Response:
    return await client.get(f"{URL}/{addendum_id}", headers=auth(token))


# Who sees which addendum of `spread` (docs/billing.md, "Who sees what").
VISIBLE = {
    "operator": {"own", "paid", "resold", "foreign"},
    "reseller": {"own", "resold"},
    "other_reseller": {"paid", "resold", "foreign"},
    "client_admin": {"own", "paid"},
    "client_member": {"own", "paid"},
}


class TestGetAddendum:
    async def test_the_item_is_the_lists_item(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int]
    ):
        r = await get(client, ls.client_admin, spread["own"])
        assert r.status_code == 200, r.text
        [listed] = (await listing(client, ls.client_admin, {"id": spread["own"]}))["results"]
        assert r.json() == listed
        assert r.json()["active_range"] == {
            "start": "2025-01-01T00:00:00Z",
            "end": "2025-02-01T00:00:00Z",
        }
        assert r.json()["client"] == {
            "id": ls.client_account.id,
            "company_name": ls.client_account.company_name,
        }

    async def test_status_at_active_at_is_absent(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int]
    ):
        r = await client.get(f"{URL}/{spread['own']}", headers=auth(ls.operator))
        assert r.status_code == 200
        assert "status_at_active_at" not in r.json()
        # The list's active_at is no parameter of one addendum: refused, naming it.
        r = await client.get(
            f"{URL}/{spread['own']}", params={"active_at": "2025-01-02"}, headers=auth(ls.operator)
        )
        assert r.status_code == 400 and list(r.json()["errors"]) == ["active_at"]

    async def test_open_end_is_null(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int]
    ):
        r = await get(client, ls.operator, spread["paid"])
        assert r.json()["active_range"]["end"] is None

    @pytest.mark.parametrize("caller", sorted(VISIBLE))
    async def test_same_scope_as_the_list(
        self, client: httpx.AsyncClient, ls: Landscape, spread: dict[str, int], caller: str
    ):
        token = getattr(ls, caller)
        for name, addendum_id in spread.items():
            r = await get(client, token, addendum_id)
            expected = 200 if name in VISIBLE[caller] else 404
            assert r.status_code == expected, (name, r.text)
            if expected == 404:
                assert r.json()["message"] == "Addendum not found."

    async def test_missing_id_is_404(self, client: httpx.AsyncClient, ls: Landscape):
        r = await get(client, ls.operator, 2**63 - 1)
        assert r.status_code == 404
        assert r.json()["message"] == "Addendum not found."

    @pytest.mark.parametrize("bad", ["x", "0", "-1", "1.5", str(2**63)])
    async def test_bad_id_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, bad: str
    ):
        r = await get(client, ls.operator, bad)
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["id"]

    async def test_anonymous_is_401(self, client: httpx.AsyncClient, spread: dict[str, int]):
        assert (await client.get(f"{URL}/{spread['own']}")).status_code == 401


class TestOpenApi:
    async def test_documented_with_the_lists_item_schema(self, client: httpx.AsyncClient):
        doc = (await client.get("/openapi.json")).json()
        op = doc["paths"]["/billing/org/v1/addendums/{id}"]["get"]
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/Addendum"}
        assert [p["name"] for p in op["parameters"]] == ["id"]
