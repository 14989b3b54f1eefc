"""Sellers: operations 4-6."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.factories import Landscape, auth, landscape, make_seller


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def seller_body(**over: object) -> dict[str, object]:
    body: dict[str, object] = {
        "email": "jane@sales.example",
        "full_name": "Jane Seller",
        "phone": "+1 (555) 0100",
    }
    body.update(over)
    return body


class TestCreateSeller:
    async def test_reseller_creates_its_seller(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post("/iam/admin/sellers", json=seller_body(), headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["email"] == "jane@sales.example"
        assert got["reseller_name"] == "Acme Hosting"
        assert got["company"] == "Acme Hosting"
        assert got["activated"] is False and got["deleted"] is False
        assert got["date_joined"].endswith("Z")
        assert isinstance(got["id"], int)

    async def test_duplicate_email_is_conflict(self, client: httpx.AsyncClient, ls: Landscape):
        await client.post("/iam/admin/sellers", json=seller_body(), headers=auth(ls.reseller))
        r = await client.post(
            "/iam/admin/sellers",
            json=seller_body(email="JANE@sales.example"),
            headers=auth(ls.other_reseller),
        )
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"
        assert "email" in r.json()["errors"]

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("email", "not-an-email"),
            ("email", "a" * 140 + "@example.com"),
            ("full_name", "x" * 256),
            ("phone", "1" * 31),
            ("phone", "CALL ME"),
        ],
    )
    async def test_invalid_field_is_400_naming_it(
        self, client: httpx.AsyncClient, ls: Landscape, field: str, value: str
    ):
        r = await client.post(
            "/iam/admin/sellers", json=seller_body(**{field: value}), headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        body = r.json()
        assert body["exception_class"] == "ValidationError"
        assert list(body["errors"]) == [field]
        assert body["message"].startswith(f"{field}: ")

    async def test_missing_required_field(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            "/iam/admin/sellers", json={"email": "a@b.example"}, headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert "full_name" in r.json()["errors"]

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_clients_are_forbidden(self, client: httpx.AsyncClient, ls: Landscape, who: str):
        r = await client.post(
            "/iam/admin/sellers", json=seller_body(), headers=auth(getattr(ls, who))
        )
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"

    async def test_operator_names_the_reseller(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            "/iam/admin/sellers",
            json=seller_body(reseller=ls.other_reseller_account.id),
            headers=auth(ls.operator),
        )
        assert r.status_code == 200, r.text
        assert r.json()["reseller_name"] == "Other Hosting"

    async def test_operator_reseller_must_be_a_reseller(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(
            "/iam/admin/sellers",
            json=seller_body(reseller=ls.client_account.id),
            headers=auth(ls.operator),
        )
        assert r.status_code == 400
        assert "reseller" in r.json()["errors"]


class TestGetSeller:
    async def test_reseller_reads_its_own(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.get(f"/iam/admin/sellers/{seller.id}", headers=auth(ls.reseller))
        assert r.status_code == 200
        assert r.json()["id"] == seller.id

    async def test_other_resellers_seller_is_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.get(f"/iam/admin/sellers/{seller.id}", headers=auth(ls.other_reseller))
        assert r.status_code == 404
        assert r.json()["exception_class"] == "NotFoundError"
        missing = await client.get("/iam/admin/sellers/999999", headers=auth(ls.other_reseller))
        assert missing.json()["message"] == r.json()["message"]

    async def test_operator_reads_any(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.get(f"/iam/admin/sellers/{seller.id}", headers=auth(ls.operator))
        assert r.status_code == 200

    async def test_non_integer_id_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get("/iam/admin/sellers/abc", headers=auth(ls.reseller))
        assert r.status_code == 400
        assert "sellerId" in r.json()["errors"]

    async def test_client_is_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.get(f"/iam/admin/sellers/{seller.id}", headers=auth(ls.client_admin))
        assert r.status_code == 403


class TestUpdateSeller:
    async def test_updates_fields(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account, phone="123")
        await session.commit()
        r = await client.patch(
            f"/iam/admin/sellers/{seller.id}",
            json={"email": "new@sales.example", "full_name": "New Name"},
            headers=auth(ls.reseller),
        )
        assert r.status_code == 200, r.text
        assert r.json()["email"] == "new@sales.example"
        assert r.json()["full_name"] == "New Name"
        assert r.json()["phone"] == "123"
        again = await client.get(f"/iam/admin/sellers/{seller.id}", headers=auth(ls.reseller))
        assert again.json()["full_name"] == "New Name"

    async def test_email_and_full_name_required(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.patch(
            f"/iam/admin/sellers/{seller.id}", json={"phone": "1"}, headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert set(r.json()["errors"]) == {"email", "full_name"}

    async def test_taken_email_is_conflict_and_nothing_changes(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        first = await make_seller(session, ls.reseller_account, email="one@sales.example")
        second = await make_seller(session, ls.reseller_account, email="two@sales.example")
        await session.commit()
        r = await client.patch(
            f"/iam/admin/sellers/{second.id}",
            json={"email": "ONE@sales.example", "full_name": "Changed"},
            headers=auth(ls.reseller),
        )
        assert r.status_code == 409
        again = await client.get(f"/iam/admin/sellers/{second.id}", headers=auth(ls.reseller))
        assert again.json()["full_name"] == second.full_name
        assert first.id != second.id

    async def test_other_tenant_is_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.patch(
            f"/iam/admin/sellers/{seller.id}",
            json={"email": "x@sales.example", "full_name": "X"},
            headers=auth(ls.other_reseller),
        )
        assert r.status_code == 404


class TestUserActions:
    async def test_create_and_update_record_one_event_each(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        from sqlalchemy import select

        from cloudadmin.db.models import UserActionEvent

        r = await client.post(
            "/iam/admin/sellers",
            json=seller_body(),
            headers={**auth(ls.reseller), "User-Agent": "pytest-agent"},
        )
        sid = r.json()["id"]
        await client.patch(
            f"/iam/admin/sellers/{sid}",
            json={"email": "jane@sales.example", "full_name": "Renamed"},
            headers=auth(ls.reseller),
        )
        await client.post("/iam/admin/sellers", json=seller_body(), headers=auth(ls.reseller))
        events = (
            (await session.execute(select(UserActionEvent).order_by(UserActionEvent.id)))
            .scalars()
            .all()
        )
        assert [e.body["action_type"] for e in events] == ["create", "update"]
        created, updated = (e.body for e in events)
        assert created["api_group"] == "seller"
        assert created["resources"] == [{"resource_id": str(sid), "resource_type": "seller"}]
        assert created["client_id"] == ls.reseller_account.id
        assert created["user_agent"] == "pytest-agent"
        assert created["token_id"] == int(ls.reseller.split("_")[0])
        assert updated["action_data"] == {"full_name": "Renamed"}
