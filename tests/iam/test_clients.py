"""PATCH /iam/clients/{clientId}: operation 1."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client
from cloudadmin.iam.clients.products import derive_account_status
from tests.factories import (
    Landscape,
    auth,
    landscape,
    make_client,
    make_key,
    make_seller,
    make_user,
)
from tests.iam.accounts_helpers import (
    CLIENT_REQUIRED_KEYS,
    EMBEDDED_USER_KEYS,
    SIX_SERVICES,
    events,
    fresh,
)


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def url(client_id: int) -> str:
    return f"/iam/clients/{client_id}"


class TestUpdateClient:
    async def test_reseller_updates_its_client_and_gets_the_full_client(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        body = {
            "email": "billing@shop.example",
            "companyName": "Shop Renamed",
            "custom_id": "crm-7",
            "name": "Sam Shop",
            "phone": "+44 20 7946 0000",
            "is_test": True,
        }
        r = await client.patch(url(ls.client_account.id), json=body, headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) >= CLIENT_REQUIRED_KEYS
        for key, value in body.items():
            assert got[key] == value
        assert got["id"] == ls.client_account.id
        assert got["resellers"] == ls.reseller_account.id
        assert got["client_type"] == "common" and got["seller"] is None
        assert got["currentUser"] == int(await _user_of(session, ls.reseller))
        assert set(got["serviceStatuses"]) == SIX_SERVICES
        assert all(set(v) == {"status", "enabled"} for v in got["serviceStatuses"].values())
        assert got["paidFeatures"] == {} and got["freeFeatures"] == {}
        assert got["status"] == "active" and got["deleted"] is False
        assert got["bill_type"] == "postpaid" and got["entryBaseDomain"] is None
        assert got["has_active_admin"] is True
        assert [u["id"] for u in got["users"]] == [ls.admin_user.id, ls.member_user.id]
        assert all(set(u) == EMBEDDED_USER_KEYS for u in got["users"])
        admin = got["users"][0]
        assert admin["groups"] == [{"id": 1, "name": "Administrators"}]
        assert admin["client"] == ls.client_account.id
        assert admin["reseller"] == ls.reseller_account.id
        assert admin["company"] == "Shop Renamed"

    async def test_fields_without_a_value_are_left_out_not_null(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        """The provider types owner, website, country_code and resellers without null."""
        r = await client.patch(url(ls.client_account.id), json={}, headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        assert not {"owner", "website", "country_code"} & set(r.json())
        top = await client.patch(url(ls.reseller_account.id), json={}, headers=auth(ls.operator))
        assert top.status_code == 200, top.text
        assert "resellers" not in top.json()  # a top-level account has no reseller
        account = await make_client(
            session,
            reseller_id=ls.reseller_account.id,
            website="https://shop.example",
            country_code="LU",
            owner=ls.admin_user.id,
        )
        await session.commit()
        got = (await client.patch(url(account.id), json={}, headers=auth(ls.reseller))).json()
        assert (got["website"], got["country_code"], got["owner"]) == (
            "https://shop.example",
            "LU",
            ls.admin_user.id,
        )

    async def test_round_trip_and_absent_fields_untouched(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        first = await client.patch(
            url(ls.client_account.id),
            json={"name": "Kept", "phone": "123"},
            headers=auth(ls.reseller),
        )
        r = await client.patch(
            url(ls.client_account.id), json={"phone": "456"}, headers=auth(ls.reseller)
        )
        assert r.json()["name"] == "Kept" and r.json()["phone"] == "456"
        assert r.json()["email"] == first.json()["email"]
        again = await client.patch(url(ls.client_account.id), json={}, headers=auth(ls.reseller))
        assert again.json() == {**r.json()}

    @pytest.mark.parametrize("field", ["custom_id", "name", "phone", "seller"])
    async def test_nullable_fields_take_null(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, field: str
    ):
        seller = await make_seller(session, ls.reseller_account)
        account = await fresh(session, Client, ls.client_account.id)
        account.custom_id, account.name, account.phone = "c", "n", "p"
        account.seller_id = seller.id
        await session.commit()
        r = await client.patch(
            url(ls.client_account.id), json={field: None}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200, r.text
        assert r.json()[field] is None

    @pytest.mark.parametrize("field", ["email", "companyName", "reseller", "is_test"])
    async def test_null_is_refused_where_the_spec_forbids_it(
        self, client: httpx.AsyncClient, ls: Landscape, field: str
    ):
        r = await client.patch(
            url(ls.client_account.id), json={field: None}, headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    async def test_explicit_null_gets_the_error_of_a_wrong_type(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.patch(
            url(ls.client_account.id),
            headers=auth(ls.reseller),
            json={"email": None, "companyName": None, "reseller": None, "is_test": None},
        )
        assert r.status_code == 400
        assert r.json()["errors"] == {
            "email": ["Input should be a valid string."],
            "companyName": ["Input should be a valid string."],
            "reseller": ["Input should be a valid integer."],
            "is_test": ["Input should be a valid boolean."],
        }

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("email", "nope"),
            ("email", "a" * 250 + "@example.com"),
            ("companyName", ""),
            ("companyName", "c" * 256),
            ("custom_id", "x" * 256),
            ("name", "n" * 256),
            ("phone", "1" * 51),
            ("reseller", "abc"),
            ("seller", 0),
            ("is_test", "perhaps"),
        ],
    )
    async def test_invalid_value_is_400_naming_the_field(
        self, client: httpx.AsyncClient, ls: Landscape, field: str, value: object
    ):
        r = await client.patch(
            url(ls.client_account.id), json={field: value}, headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert r.json()["exception_class"] == "ValidationError"
        assert list(r.json()["errors"]) == [field]

    async def test_status_cannot_be_set(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.patch(
            url(ls.client_account.id), json={"status": "paused"}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["status"] == "active"

    async def test_taken_company_name_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.patch(
            url(ls.client_account.id),
            json={"companyName": "other hosting"},
            headers=auth(ls.reseller),
        )
        assert r.status_code == 400
        assert r.json()["errors"] == {"companyName": ["Company with this name already exists"]}

    async def test_changing_the_case_of_its_own_company_name(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        name = ls.client_account.company_name.upper()
        r = await client.patch(
            url(ls.client_account.id), json={"companyName": name}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["companyName"] == name

    async def test_imported_statuses_are_kept_and_completed(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        account = await make_client(
            session,
            reseller_id=ls.reseller_account.id,
            status="trialend",
            capabilities=["CDN", "DNS"],
            service_statuses={"CDN": {"status": "trialend", "enabled": True}},
            paid_features={
                "CDN": [{"feature_id": 1, "name": "paid feature name", "service": "CDN"}]
            },
        )
        await session.commit()
        r = await client.patch(url(account.id), json={"name": "x"}, headers=auth(ls.reseller))
        got = r.json()
        assert got["status"] == "trialend"
        assert got["capabilities"] == ["CDN", "DNS"]
        assert got["serviceStatuses"]["CDN"] == {"status": "trialend", "enabled": True}
        assert got["serviceStatuses"]["DNS"] == {"status": "new", "enabled": True}
        assert got["serviceStatuses"]["CLOUD"] == {"status": "new", "enabled": False}
        assert got["paidFeatures"]["CDN"][0]["feature_id"] == 1
        assert got["has_active_admin"] is False and got["users"] == []


class TestPrivilegedFields:
    async def test_reseller_assigns_its_seller(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.patch(
            url(ls.client_account.id), json={"seller": seller.id}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["seller"] == seller.id

    @pytest.mark.parametrize("deleted", [False, True])
    async def test_foreign_or_deleted_seller_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, deleted: bool
    ):
        owner = ls.reseller_account if deleted else ls.other_reseller_account
        seller = await make_seller(session, owner, deleted=deleted)
        await session.commit()
        r = await client.patch(
            url(ls.client_account.id), json={"seller": seller.id}, headers=auth(ls.reseller)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["seller"]

    async def test_operator_moves_a_client_to_another_reseller(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        old_seller = await make_seller(session, ls.reseller_account)
        account = await fresh(session, Client, ls.client_account.id)
        account.seller_id = old_seller.id
        await session.commit()
        r = await client.patch(
            url(ls.client_account.id),
            json={"reseller": ls.other_reseller_account.id},
            headers=auth(ls.operator),
        )
        assert r.status_code == 200, r.text
        assert r.json()["resellers"] == ls.other_reseller_account.id
        assert r.json()["seller"] is None  # the former reseller's seller no longer fits
        gone = await client.patch(url(ls.client_account.id), json={}, headers=auth(ls.reseller))
        assert gone.status_code == 404

    async def test_operator_moves_a_client_with_a_seller_of_the_new_reseller(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.other_reseller_account)
        await session.commit()
        r = await client.patch(
            url(ls.client_account.id),
            json={"reseller": ls.other_reseller_account.id, "seller": seller.id},
            headers=auth(ls.operator),
        )
        assert r.status_code == 200, r.text
        assert r.json()["seller"] == seller.id

    async def test_reseller_that_is_not_a_reseller_account_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        common = await make_client(session)
        await session.commit()
        for reseller_id in (common.id, 999999):
            r = await client.patch(
                url(ls.client_account.id), json={"reseller": reseller_id}, headers=auth(ls.operator)
            )
            assert r.status_code == 400
            assert list(r.json()["errors"]) == ["reseller"]

    async def test_a_reseller_cannot_give_its_client_away(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.patch(
            url(ls.client_account.id),
            json={"reseller": ls.other_reseller_account.id},
            headers=auth(ls.reseller),
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["reseller"]

    @pytest.mark.parametrize(
        ("field", "value"), [("reseller", None), ("seller", None), ("is_test", True)]
    )
    async def test_client_administrator_may_not_change_them(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        field: str,
        value: object,
    ):
        body = {"name": "Changed", field: value if field != "reseller" else ls.reseller_account.id}
        r = await client.patch(url(ls.client_account.id), json=body, headers=auth(ls.client_admin))
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"
        assert (await fresh(session, Client, ls.client_account.id)).name is None

    async def test_reseller_may_not_change_them_on_its_own_account(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.patch(
            url(ls.reseller_account.id), json={"is_test": True}, headers=auth(ls.reseller)
        )
        assert r.status_code == 403
        ok = await client.patch(
            url(ls.reseller_account.id), json={"name": "Acme"}, headers=auth(ls.reseller)
        )
        assert ok.status_code == 200


class TestAccess:
    async def test_client_administrator_updates_its_own_account(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.patch(
            url(ls.client_account.id), json={"name": "Mine"}, headers=auth(ls.client_admin)
        )
        assert r.status_code == 200
        assert r.json()["name"] == "Mine"
        assert r.json()["currentUser"] == ls.admin_user.id

    async def test_client_member_is_forbidden(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.patch(
            url(ls.client_account.id), json={"name": "x"}, headers=auth(ls.client_member)
        )
        assert r.status_code == 403

    async def test_operator_updates_any_account(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.patch(
            url(ls.client_account.id), json={"is_test": True}, headers=auth(ls.operator)
        )
        assert r.status_code == 200
        assert r.json()["is_test"] is True

    async def test_other_tenants_get_404_as_for_a_missing_account(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        other = await make_client(session, reseller_id=ls.other_reseller_account.id)
        other_admin = await make_key(session, await make_user(session, other))
        await session.commit()
        missing = await client.patch(url(999999), json={}, headers=auth(ls.reseller))
        assert missing.status_code == 404
        for token, target in [
            (ls.other_reseller, ls.client_account.id),
            (other_admin, ls.client_account.id),
            (ls.client_admin, other.id),
            (ls.client_admin, ls.reseller_account.id),
        ]:
            r = await client.patch(url(target), json={"name": "x"}, headers=auth(token))
            assert r.status_code == 404
            assert r.json()["message"] == missing.json()["message"]

    async def test_deleted_account_is_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        gone = await make_client(session, reseller_id=ls.reseller_account.id, deleted=True)
        await session.commit()
        r = await client.patch(url(gone.id), json={}, headers=auth(ls.reseller))
        assert r.status_code == 404

    async def test_non_integer_id_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.patch("/iam/clients/abc", json={}, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["clientId"]


class TestUserActions:
    async def test_one_event_with_the_changed_fields_only(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        current = ls.client_account.email
        await client.patch(
            url(ls.client_account.id),
            json={"email": current, "name": "New name"},
            headers=auth(ls.reseller),
        )
        await client.patch(
            url(ls.client_account.id), json={"name": "New name"}, headers=auth(ls.reseller)
        )
        await client.patch(
            url(ls.client_account.id), json={"is_test": True}, headers=auth(ls.client_admin)
        )
        found = await events(session)
        assert len(found) == 1
        event = found[0]
        assert event["action_type"] == "update" and event["api_group"] == "client"
        assert event["resources"] == [
            {"resource_id": str(ls.client_account.id), "resource_type": "client"}
        ]
        assert event["client_id"] == ls.client_account.id
        assert event["action_data"] == {"name": "New name"}


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ({}, "preparation"),
        ({"CDN": "new", "DNS": "deleted"}, "preparation"),
        ({"CDN": "trial", "DNS": "new"}, "trial"),
        ({"CDN": "activating"}, "trial"),
        ({"CDN": "trial", "DNS": "active"}, "active"),
        ({"CDN": "trialend", "DNS": "new"}, "trialend"),
        ({"CDN": "trialend", "DNS": "trial"}, "trial"),
        ({"CDN": "paused", "DNS": "new"}, "paused"),
        ({"CDN": "paused", "DNS": "trialend"}, "trialend"),
    ],
)
def test_account_status_follows_its_services(statuses: dict[str, str], expected: str):
    given = {k: {"status": v, "enabled": True} for k, v in statuses.items()}
    assert derive_account_status(given) == expected


async def _user_of(session: AsyncSession, token: str) -> int:
    from cloudadmin.db.models import ApiKey

    key = await fresh(session, ApiKey, int(token.split("_")[0]))
    return key.user_id
