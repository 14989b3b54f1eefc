"""POST /iam/users: operation 2."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, User
from cloudadmin.kit.crypto import verify_password
from tests.factories import Landscape, auth, landscape, make_key, make_seller
from tests.iam.accounts_helpers import (
    SIX_SERVICES,
    STRONG_PASSWORD,
    clients_named,
    count,
    events,
    fresh,
    users_with_email,
)

URL = "/iam/users"
CREATION_KEYS = {
    "id",
    "email",
    "name",
    "lang",
    "phone",
    "company",
    "reseller",
    "client",
    "deleted",
    "groups",
    "activated",
    "sso_auth",
    "two_fa",
    "auth_types",
    "user_type",
    "is_active",
    "client_and_roles",
}


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def user_body(**over: object) -> dict[str, object]:
    body: dict[str, object] = {
        "email": "owner@newshop.example",
        "password": STRONG_PASSWORD,
        "company": "New Shop Ltd",
        "name": "Olivia Owner",
        "phone": "+1 555 0100",
    }
    body.update(over)
    return body


class TestCreateUser:
    async def test_reseller_creates_account_and_its_administrator(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        assert r.status_code == 201, r.text
        got = r.json()
        assert set(got) == CREATION_KEYS
        assert got["email"] == "owner@newshop.example"
        assert got["name"] == "Olivia Owner" and got["phone"] == "+1 555 0100"
        assert got["lang"] == "en" and got["company"] == "New Shop Ltd"
        assert got["reseller"] == ls.reseller_account.id
        assert got["groups"] == [{"id": 1, "name": "Administrators"}]
        assert got["deleted"] is False and got["activated"] is True
        assert got["sso_auth"] is False and got["two_fa"] is False
        assert got["auth_types"] == ["password"]
        assert got["user_type"] == "common" and got["is_active"] is True
        assert got["client_and_roles"] == [
            {
                "client_id": got["client"],
                "client_company_name": "New Shop Ltd",
                "user_roles": ["1"],
                "user_id": got["id"],
            }
        ]
        account = await fresh(session, Client, got["client"])
        assert account.client_type == "common"
        assert account.reseller_id == ls.reseller_account.id
        assert account.email == "owner@newshop.example"
        assert account.name == "Olivia Owner" and account.phone == "+1 555 0100"
        assert account.company_name == "New Shop Ltd"
        assert account.status == "preparation"
        assert account.deleted is False and account.is_test is False
        user = await fresh(session, User, got["id"])
        assert user.password_hash.startswith("$argon2id$")
        assert verify_password(user.password_hash, STRONG_PASSWORD)
        assert STRONG_PASSWORD not in r.text

    async def test_optional_fields_are_stored(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(
            URL,
            json=user_body(
                lang="de", custom_id="ext-42", country_code="de", is_test=True, user_type="common"
            ),
            headers=auth(ls.reseller),
        )
        assert r.status_code == 201, r.text
        assert r.json()["lang"] == "de"
        account = await fresh(session, Client, r.json()["client"])
        assert (account.custom_id, account.country_code, account.is_test) == ("ext-42", "DE", True)

    async def test_the_new_user_authenticates_at_once(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        user = await fresh(session, User, r.json()["id"])
        token = await make_key(session, user)
        await session.commit()
        got = await client.patch(f"/iam/clients/{r.json()['client']}", json={}, headers=auth(token))
        assert got.status_code == 200, got.text
        assert got.json()["currentUser"] == user.id
        assert got.json()["has_active_admin"] is True
        assert [u["id"] for u in got.json()["users"]] == [user.id]

    async def test_services_set_availability_capabilities_and_statuses(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        reseller = await fresh(session, Client, ls.reseller_account.id)
        reseller.service_availability = {"DNS": False, "DDOS": False}
        await session.commit()
        services = [
            {"product_name": "CDN", "available": False},
            {"product_name": "DDOS", "available": True},
            {"product_name": "DNS", "available": None},
        ]
        r = await client.post(URL, json=user_body(services=services), headers=auth(ls.reseller))
        assert r.status_code == 201, r.text
        account = await fresh(session, Client, r.json()["client"])
        assert account.service_availability == {"CDN": False, "DDOS": True}
        assert account.capabilities == ["STORAGE", "STREAMING", "DDOS", "CLOUD"]
        assert set(account.service_statuses) == SIX_SERVICES
        assert account.service_statuses["CDN"] == {"status": "new", "enabled": False}
        assert account.service_statuses["DNS"] == {"status": "new", "enabled": False}
        assert account.service_statuses["DDOS"] == {"status": "new", "enabled": True}
        assert account.service_statuses["CLOUD"] == {"status": "new", "enabled": True}

    async def test_without_services_every_product_inherits(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        account = await fresh(session, Client, r.json()["client"])
        assert account.service_availability == {}
        assert set(account.capabilities) == SIX_SERVICES

    async def test_taken_company_is_400_and_nothing_is_written(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        taken = ls.reseller_account.company_name.upper()
        r = await client.post(URL, json=user_body(company=taken), headers=auth(ls.reseller))
        assert r.status_code == 400
        assert r.json()["errors"] == {"company": ["Company with this name already exists"]}
        assert await users_with_email(session, "owner@newshop.example") == 0

    async def test_taken_email_is_409_and_nothing_is_written(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        existing = (await fresh(session, User, ls.admin_user.id)).email
        before = await count(session, Client)
        r = await client.post(
            URL, json=user_body(email=existing.upper()), headers=auth(ls.reseller)
        )
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"
        assert list(r.json()["errors"]) == ["email"]
        assert await count(session, Client) == before

    @pytest.mark.parametrize(
        ("password", "reason"),
        [
            ("Sh0rt!", "too short"),
            ("password123", "too common"),
            ("QWERTYUIOP", "too common"),
            ("83920174650", "entirely numeric"),
            ("owner@newshop.example", "similar to the email"),
            ("x" * 129, "no more than 128"),
        ],
    )
    async def test_weak_password_is_400(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        password: str,
        reason: str,
    ):
        r = await client.post(URL, json=user_body(password=password), headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["password"]
        assert any(reason in m for m in r.json()["errors"]["password"])
        assert password not in r.text
        assert await clients_named(session, "New Shop Ltd") == 0

    @pytest.mark.parametrize(
        ("field", "value", "error_field"),
        [
            ("email", "not-an-email", "email"),
            ("email", "a" * 250 + "@example.com", "email"),
            ("company", "", "company"),
            ("company", "c" * 256, "company"),
            ("name", "n" * 256, "name"),
            ("phone", "1" * 51, "phone"),
            ("lang", "fr", "lang"),
            ("user_type", "reseller", "user_type"),
            ("country_code", "XX", "country_code"),
            ("country_code", "DEU", "country_code"),
            ("is_test", "maybe", "is_test"),
            ("seller", 0, "seller"),
            ("services", [{"product_name": "WAAP", "available": True}], "services.0.product_name"),
            ("services", [{"product_name": "CDN", "available": "perhaps"}], "services.0.available"),
            (
                "services",
                [
                    {"product_name": "CDN", "available": True},
                    {"product_name": "CDN", "available": False},
                ],
                "services",
            ),
        ],
    )
    async def test_invalid_field_is_400_naming_it(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        field: str,
        value: object,
        error_field: str,
    ):
        r = await client.post(URL, json=user_body(**{field: value}), headers=auth(ls.reseller))
        assert r.status_code == 400, r.text
        assert r.json()["exception_class"] == "ValidationError"
        assert list(r.json()["errors"]) == [error_field]

    @pytest.mark.parametrize("field", ["email", "password", "company"])
    async def test_required_fields(self, client: httpx.AsyncClient, ls: Landscape, field: str):
        body = user_body()
        del body[field]
        r = await client.post(URL, json=body, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    async def test_seller_of_the_reseller_is_assigned(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.post(URL, json=user_body(seller=seller.id), headers=auth(ls.reseller))
        assert r.status_code == 201, r.text
        assert (await fresh(session, Client, r.json()["client"])).seller_id == seller.id

    async def test_seller_of_another_reseller_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.other_reseller_account)
        await session.commit()
        r = await client.post(URL, json=user_body(seller=seller.id), headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["seller"]

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_client_callers_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        r = await client.post(URL, json=user_body(), headers=auth(getattr(ls, who)))
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"

    async def test_without_a_key_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(URL, json=user_body())
        assert r.status_code == 401

    async def test_operator_names_the_reseller(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            URL, json=user_body(reseller=ls.other_reseller_account.id), headers=auth(ls.operator)
        )
        assert r.status_code == 201, r.text
        assert r.json()["reseller"] == ls.other_reseller_account.id

    async def test_operator_reseller_must_be_a_reseller(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(
            URL, json=user_body(reseller=ls.client_account.id), headers=auth(ls.operator)
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["reseller"]

    async def test_a_reseller_cannot_create_under_another_reseller(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(
            URL, json=user_body(reseller=ls.other_reseller_account.id), headers=auth(ls.reseller)
        )
        assert r.status_code == 201
        assert r.json()["reseller"] == ls.reseller_account.id

    async def test_entry_base_domain_comes_from_the_resellers_branding(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        from cloudadmin.db.models import Branding

        session.add(
            Branding(
                reseller_id=ls.reseller_account.id,
                domain="acme.example",
                public_settings={"entryBaseDomain": "panel.acme.example"},
            )
        )
        await session.commit()
        r = await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        account = await fresh(session, Client, r.json()["client"])
        assert account.entry_base_domain == "panel.acme.example"


class TestConcurrentCreation:
    async def test_same_email_exactly_one_wins(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        first, second = await asyncio.gather(
            client.post(URL, json=user_body(company="Shop A"), headers=auth(ls.reseller)),
            client.post(URL, json=user_body(company="Shop B"), headers=auth(ls.other_reseller)),
        )
        assert sorted([first.status_code, second.status_code]) == [201, 409]
        loser = first if first.status_code == 409 else second
        assert loser.json()["exception_class"] == "ConflictError"
        assert await users_with_email(session, "owner@newshop.example") == 1
        assert await clients_named(session, "Shop A") + await clients_named(session, "Shop B") == 1

    async def test_same_company_exactly_one_wins(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        first, second = await asyncio.gather(
            client.post(URL, json=user_body(email="a@shop.example"), headers=auth(ls.reseller)),
            client.post(URL, json=user_body(email="b@shop.example"), headers=auth(ls.reseller)),
        )
        assert sorted([first.status_code, second.status_code]) == [201, 400]
        assert await clients_named(session, "New Shop Ltd") == 1
        assert (
            await users_with_email(session, "a@shop.example")
            + await users_with_email(session, "b@shop.example")
        ) == 1


class TestUserActions:
    async def test_creation_records_one_event_without_the_password(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        await client.post(URL, json=user_body(password="short"), headers=auth(ls.reseller))
        found = await events(session)
        assert len(found) == 1
        event = found[0]
        assert event["action_type"] == "create" and event["api_group"] == "user"
        assert event["client_id"] == r.json()["client"]
        assert event["resources"] == [
            {"resource_id": str(r.json()["client"]), "resource_type": "client"},
            {"resource_id": str(r.json()["id"]), "resource_type": "user"},
        ]
        assert event["token_id"] == int(ls.reseller.split("_")[0])
        assert event["action_data"]["company"] == "New Shop Ltd"
        assert "password" not in event["action_data"]
        assert STRONG_PASSWORD not in str(event)


class TestActivityLog:
    async def test_the_logged_request_body_hides_the_password(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        from sqlalchemy import select

        from cloudadmin.db.models import ActivityLogEntry

        await client.post(URL, json=user_body(), headers=auth(ls.reseller))
        rows = (await session.execute(select(ActivityLogEntry))).scalars().all()
        await session.commit()
        assert [r.path for r in rows] == [URL]
        assert STRONG_PASSWORD not in rows[0].data
        assert "owner@newshop.example" in rows[0].data
