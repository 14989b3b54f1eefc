"""GET /iam/admin/sellers (filters, ordering, array or page) and
DELETE /iam/admin/sellers/{sellerId}."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, Seller
from tests.factories import Landscape, auth, landscape, make_client, make_seller
from tests.iam.accounts_helpers import events, fresh

SELLER_KEYS = {
    "id",
    "email",
    "full_name",
    "phone",
    "reseller_name",
    "company",
    "date_joined",
    "activated",
    "deleted",
}


class Shop:
    """Three sellers of the reseller (one deleted, one activated) and one of the other."""

    ls: Landscape
    ann: Seller
    bob: Seller
    old: Seller
    stranger: Seller


@pytest.fixture
async def shop(session: AsyncSession) -> Shop:
    s = Shop()
    s.ls = await landscape(session)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    s.ann = await make_seller(
        session,
        s.ls.reseller_account,
        email="Ann@Sales.example",
        full_name="Ann Archer",
        activated=True,
        date_joined=start,
        phone="+1 555",
    )
    s.bob = await make_seller(
        session,
        s.ls.reseller_account,
        email="bob@sales.example",
        full_name="Bob Baker",
        date_joined=start + timedelta(days=2),
    )
    s.old = await make_seller(
        session,
        s.ls.reseller_account,
        email="old@sales.example",
        full_name="Olga Archer",
        deleted=True,
        date_joined=start + timedelta(days=1),
    )
    s.stranger = await make_seller(
        session,
        s.ls.other_reseller_account,
        email="stranger@other.example",
        full_name="Stan Archer",
    )
    await session.commit()
    return s


async def listed(client: httpx.AsyncClient, token: str, query: str = "") -> list[int]:
    r = await client.get(f"/iam/admin/sellers{query}", headers=auth(token))
    assert r.status_code == 200, r.text
    body = r.json()
    items = body if isinstance(body, list) else body["results"]
    return [s["id"] for s in items]


class TestListSellers:
    async def test_reseller_gets_an_array_of_its_own_sellers(
        self, client: httpx.AsyncClient, shop: Shop
    ):
        r = await client.get("/iam/admin/sellers", headers=auth(shop.ls.reseller))
        assert r.status_code == 200
        body = r.json()
        # Without limit: the provider's SellersArray, deleted sellers included.
        assert isinstance(body, list)
        assert [s["id"] for s in body] == [shop.ann.id, shop.bob.id, shop.old.id]
        ann = body[0]
        assert set(ann) == SELLER_KEYS
        assert ann["reseller_name"] == "Acme Hosting" and ann["activated"] is True
        assert ann["date_joined"] == "2025-01-01T00:00:00Z"

    async def test_operator_sees_every_seller(self, client: httpx.AsyncClient, shop: Shop):
        ids = await listed(client, shop.ls.operator)
        assert ids == [shop.ann.id, shop.bob.id, shop.old.id, shop.stranger.id]

    async def test_with_limit_a_page(self, client: httpx.AsyncClient, shop: Shop):
        r = await client.get("/iam/admin/sellers?limit=2", headers=auth(shop.ls.reseller))
        page = r.json()
        assert page["count"] == 3 and len(page["results"]) == 2
        assert page["previous"] is None
        assert page["next"] == "http://testserver/iam/admin/sellers?limit=2&offset=2"
        last = (await client.get(page["next"], headers=auth(shop.ls.reseller))).json()
        assert [s["id"] for s in last["results"]] == [shop.old.id]
        assert last["next"] is None and last["previous"].endswith("/iam/admin/sellers?limit=2")

    @pytest.mark.parametrize(
        ("query", "names"),
        [
            ("?email=ann@sales.EXAMPLE", ["ann"]),
            ("?email=ann", []),
            ("?full_name=archer", ["ann", "old"]),
            ("?full_name=50%25", []),
            ("?activated=true", ["ann"]),
            ("?activated=false", ["bob", "old"]),
            ("?deleted=true", ["old"]),
            ("?deleted=false", ["ann", "bob"]),
            ("?deleted=both", ["ann", "bob", "old"]),
            ("?reseller_name=acme", ["ann", "bob", "old"]),
            ("?reseller_name=other", []),
            ("?full_name=archer&deleted=false", ["ann"]),
        ],
    )
    async def test_filters(
        self, client: httpx.AsyncClient, shop: Shop, query: str, names: list[str]
    ):
        assert await listed(client, shop.ls.reseller, query) == [getattr(shop, n).id for n in names]

    async def test_id_filters(self, client: httpx.AsyncClient, shop: Shop):
        token = shop.ls.reseller
        assert await listed(client, token, f"?id={shop.bob.id}") == [shop.bob.id]
        assert await listed(client, token, f"?id={shop.stranger.id}") == []
        assert await listed(client, token, f"?id__in={shop.old.id},{shop.ann.id},9999999999") == [
            shop.ann.id,
            shop.old.id,
        ]
        digits = str(shop.bob.id)[-2:]
        expected = [s.id for s in (shop.ann, shop.bob, shop.old) if digits in str(s.id)]
        assert await listed(client, token, f"?id__contains={digits}") == expected

    async def test_operator_filters_by_reseller_name(self, client: httpx.AsyncClient, shop: Shop):
        assert await listed(client, shop.ls.operator, "?reseller_name=OTHER") == [shop.stranger.id]

    @pytest.mark.parametrize(
        ("query", "order"),
        [
            ("?ordering=-id", ["old", "bob", "ann"]),
            ("?ordering=date_joined", ["ann", "old", "bob"]),
            ("?ordering=activated,-date_joined", ["bob", "old", "ann"]),
            ("?ordering=-deleted&ordering=full_name", ["old", "ann", "bob"]),
            ("?ordering=email", ["ann", "bob", "old"]),
        ],
    )
    async def test_ordering(
        self, client: httpx.AsyncClient, shop: Shop, query: str, order: list[str]
    ):
        assert await listed(client, shop.ls.reseller, query) == [getattr(shop, n).id for n in order]

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("?ordering=phone", "ordering"),
            ("?limit=0", "limit"),
            ("?limit=1001", "limit"),
            ("?offset=-1", "offset"),
            ("?id=x", "id"),
            ("?id=2147483648", "id"),
            ("?id__in=1,,2", "id__in"),
            ("?id__in=a", "id__in"),
            ("?id__contains=1a", "id__contains"),
            ("?activated=maybe", "activated"),
            ("?email=" + "a" * 255, "email"),
        ],
    )
    async def test_bad_parameter_is_400_naming_it(
        self, client: httpx.AsyncClient, shop: Shop, query: str, field: str
    ):
        r = await client.get(f"/iam/admin/sellers{query}", headers=auth(shop.ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_clients_are_forbidden(self, client: httpx.AsyncClient, shop: Shop, who: str):
        r = await client.get("/iam/admin/sellers", headers=auth(getattr(shop.ls, who)))
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"


def url(seller_id: int) -> str:
    return f"/iam/admin/sellers/{seller_id}"


class TestDeleteSeller:
    async def test_reseller_deletes_its_seller_and_its_clients_lose_it(
        self, client: httpx.AsyncClient, shop: Shop, session: AsyncSession
    ):
        served = await make_client(
            session, reseller_id=shop.ls.reseller_account.id, seller_id=shop.bob.id
        )
        kept = await make_client(
            session, reseller_id=shop.ls.reseller_account.id, seller_id=shop.ann.id
        )
        await session.commit()
        r = await client.delete(url(shop.bob.id), headers=auth(shop.ls.reseller))
        assert r.status_code == 204, r.text
        assert r.content == b""
        assert (await fresh(session, Client, served.id)).seller_id is None
        assert (await fresh(session, Client, kept.id)).seller_id == shop.ann.id
        # Still read, marked deleted.
        got = await client.get(url(shop.bob.id), headers=auth(shop.ls.reseller))
        assert got.status_code == 200 and got.json()["deleted"] is True
        assert await listed(client, shop.ls.reseller, "?deleted=true") == [shop.bob.id, shop.old.id]

    async def test_a_deleted_seller_is_not_assignable(
        self, client: httpx.AsyncClient, shop: Shop, session: AsyncSession
    ):
        account = await make_client(session, reseller_id=shop.ls.reseller_account.id)
        await session.commit()
        await client.delete(url(shop.bob.id), headers=auth(shop.ls.reseller))
        r = await client.patch(
            f"/iam/clients/{account.id}",
            json={"seller": shop.bob.id},
            headers=auth(shop.ls.reseller),
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["seller"]

    async def test_a_deleted_seller_is_404_to_delete_or_update(
        self, client: httpx.AsyncClient, shop: Shop
    ):
        again = await client.delete(url(shop.old.id), headers=auth(shop.ls.reseller))
        assert again.status_code == 404
        r = await client.patch(
            url(shop.old.id),
            headers=auth(shop.ls.reseller),
            json={"email": "x@sales.example", "full_name": "X"},
        )
        assert r.status_code == 404

    async def test_operator_deletes_any_seller(self, client: httpx.AsyncClient, shop: Shop):
        r = await client.delete(url(shop.stranger.id), headers=auth(shop.ls.operator))
        assert r.status_code == 204

    async def test_another_resellers_seller_is_404(
        self, client: httpx.AsyncClient, shop: Shop, session: AsyncSession
    ):
        for target in (shop.stranger.id, 999999):
            r = await client.delete(url(target), headers=auth(shop.ls.reseller))
            assert r.status_code == 404
            assert r.json()["message"] == "Seller not found."
        assert (await fresh(session, Seller, shop.stranger.id)).deleted is False

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_clients_are_forbidden(
        self, client: httpx.AsyncClient, shop: Shop, session: AsyncSession, who: str
    ):
        r = await client.delete(url(shop.ann.id), headers=auth(getattr(shop.ls, who)))
        assert r.status_code == 403
        assert (await fresh(session, Seller, shop.ann.id)).deleted is False

    @pytest.mark.parametrize("bad", ["0", "x", "2147483648"])
    async def test_bad_id_is_400(self, client: httpx.AsyncClient, shop: Shop, bad: str):
        r = await client.delete(f"/iam/admin/sellers/{bad}", headers=auth(shop.ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["sellerId"]

    async def test_concurrent_deletions_exactly_one_wins(
        self, client: httpx.AsyncClient, shop: Shop, session: AsyncSession
    ):
        first, second = await asyncio.gather(
            client.delete(url(shop.ann.id), headers=auth(shop.ls.reseller)),
            client.delete(url(shop.ann.id), headers=auth(shop.ls.operator)),
        )
        assert sorted([first.status_code, second.status_code]) == [204, 404]
        found = await events(session)
        assert [(e["action_type"], e["api_group"]) for e in found] == [("delete", "seller")]
        assert found[0]["resources"] == [
            {"resource_id": str(shop.ann.id), "resource_type": "seller"}
        ]
