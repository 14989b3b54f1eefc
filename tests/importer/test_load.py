"""load_document: semantics of the load format (docs/import.md) on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.apikey import parse_authorization
from cloudadmin.auth.service import authenticate
from cloudadmin.db.models import (
    Addendum,
    AmqpSubscription,
    ApiKey,
    Branding,
    Client,
    PriceCatalogue,
    User,
    user_groups,
)
from cloudadmin.errors import TokenNotValid
from cloudadmin.importer import LoadError, load_document, parse_document
from cloudadmin.kit.crypto import SecretBox, verify_password
from tests.factories import make_client, make_reseller, make_seller
from tests.importer.documents import addendum, example


async def load(session: AsyncSession, document: dict[str, Any], box: SecretBox) -> None:
    await load_document(session, document, box)
    await session.commit()


async def count(session: AsyncSession, model: Any) -> int:
    return (await session.execute(select(func.count()).select_from(model))).scalar_one()


async def snapshot(session: AsyncSession) -> dict[str, list[tuple[Any, ...]]]:
    tables = ["clients", "users", "user_groups", "api_keys", "projects", "regions"]
    return {
        t: [tuple(r) for r in (await session.execute(text(f"SELECT * FROM {t} ORDER BY 1, 2")))]
        for t in tables
    }


async def load_error(session: AsyncSession, document: Any, box: SecretBox) -> LoadError:
    with pytest.raises(LoadError) as caught:
        await load_document(session, document, box)
    await session.rollback()
    return caught.value


class TestExampleDocument:
    async def test_loads_every_record(self, session: AsyncSession, box: SecretBox) -> None:
        report = await load_document(session, example(), box)
        await session.commit()
        assert report.counts["clients"] == 2
        assert report.total == 10
        assert await count(session, Client) == 2
        assert await count(session, User) == 3

    async def test_applies_the_documented_defaults(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        reseller = await session.get(Client, 1000)
        assert reseller is not None
        assert (reseller.status, reseller.deleted, reseller.is_test, reseller.bill_type) == (
            "active", False, False, "postpaid"
        )  # fmt: skip
        assert reseller.capabilities == [] and reseller.service_statuses == {}
        user = await session.get(User, 20)
        assert user is not None
        assert (user.lang, user.activated, user.auth_types, user.user_type) == (
            "en", True, ["password"], "common"
        )  # fmt: skip
        assert user.company == "Shop Ltd"  # the client's companyName
        assert [g.name for g in user.groups] == ["Administrators"]

    async def test_maps_wire_names_to_columns(self, session: AsyncSession, box: SecretBox) -> None:
        await load(session, example(), box)
        client = await session.get(Client, 2001)
        assert client is not None
        assert (client.company_name, client.reseller_id, client.client_type) == (
            "Shop Ltd", 1000, "common"
        )  # fmt: skip
        assert client.capabilities == ["CDN", "CLOUD"]


class TestIdempotence:
    async def test_loading_twice_leaves_the_same_rows(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        first = await snapshot(session)
        await load(session, example(), box)
        assert await snapshot(session) == first

    async def test_a_second_document_updates_and_never_deletes(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        await load(
            session,
            {"clients": [{"id": 2001, "email": "new@shop.example", "companyName": "Shop AG",
                          "resellers": 1000}]},
            box,
        )  # fmt: skip
        assert await count(session, Client) == 2
        client = await session.get(Client, 2001)
        assert client is not None and client.company_name == "Shop AG"

    async def test_group_membership_is_replaced_by_the_documents_list(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        doc = example()
        doc["users"][2]["groups"] = [2, "Engineers"]
        await load(session, doc, box)
        rows = await session.execute(
            select(user_groups.c.group_id)
            .where(user_groups.c.user_id == 20)
            .order_by(user_groups.c.group_id)
        )
        assert list(rows.scalars()) == [2, 5]

    async def test_omitted_password_keeps_the_stored_one(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["users"][2]["password"] = "correct horse"
        await load(session, doc, box)
        await load(session, example(), box)
        user = await session.get(User, 20)
        assert user is not None and user.password_hash is not None
        assert verify_password(user.password_hash, "correct horse")


class TestAllOrNothing:
    async def test_a_bad_last_record_writes_nothing(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["clients"][1]["email"] = "not-an-address"
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == ["/clients/1/email: not a valid e-mail address"]
        assert await count(session, Client) == 0
        assert await count(session, User) == 0

    async def test_every_problem_is_reported(self, session: AsyncSession, box: SecretBox) -> None:
        doc = example()
        doc["clients"][0]["status"] = "sleeping"
        doc["users"][1]["lang"] = "fr"
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/clients/0/status", "/users/1/lang"]

    async def test_a_document_that_is_not_an_object_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        error = await load_error(session, [1, 2], box)  # type: ignore[arg-type]
        assert str(error.problems[0]) == "the document must be a JSON object"


class TestOneRunReportsEverything:
    async def test_a_field_error_and_a_reference_error_are_reported_together(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["users"][0]["lang"] = "fr"  # a field error
        doc["users"][2]["client"] = 4242  # a reference error in another record
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == [
            "/users/0/lang: must be one of 'de', 'en', 'ru', 'zh' or 'az'",
            "/users/2/client: no client with id 4242 in the document or the database",
        ]
        assert await count(session, User) == 0

    async def test_references_of_a_chunk_with_a_bad_record_are_checked(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["addendums"] = [addendum(1), addendum(2, status="gone"), addendum(3, client_id=77)]
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == [
            "/addendums/1/status",
            "/addendums/2/client_id",
        ]

    async def test_a_reference_to_a_record_with_a_field_error_is_not_reported(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["clients"][1]["email"] = "nope"  # users/2 and projects/0 name this client
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == ["/clients/1/email: not a valid e-mail address"]


class TestUnknownKeys:
    async def test_an_unknown_record_key_is_rejected_at_its_pointer(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["users"][0]["emial"] = "typo@operator.example"
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == ["/users/0/emial: unknown key"]

    async def test_an_unknown_top_level_key_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        error = await load_error(session, {"client": []}, box)
        assert [str(p) for p in error.problems] == ["/client: unknown key"]

    async def test_derived_client_fields_are_accepted_and_ignored(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["clients"][1].update(currentUser=20, has_active_admin=True, users=[{"id": 20}])
        await load(session, doc, box)
        assert await count(session, Client) == 2


class TestReferences:
    async def test_a_reference_to_nothing_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["users"][2]["client"] = 4242
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/users/2/client"]
        assert "4242" in error.problems[0].message

    async def test_a_reference_to_a_stored_row_is_accepted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        stored = await make_client(session, company_name="Stored Ltd")
        await session.commit()
        doc = {"users": [{"id": 77, "email": "u@stored.example", "client": stored.id}]}
        await load(session, doc, box)
        user = await session.get(User, 77)
        assert user is not None and user.company == "Stored Ltd"

    async def test_resellers_must_name_a_reseller_account(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["clients"][0]["client_type"] = "common"
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/clients/1/resellers"]

    async def test_a_stored_reseller_account_is_accepted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        reseller = await make_reseller(session)
        await session.commit()
        doc = {"sellers": [{"id": 9, "email": "s@r.example", "full_name": "S",
                            "reseller": reseller.id}]}  # fmt: skip
        await load(session, doc, box)

    async def test_forward_references_in_any_order_are_accepted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        ordered = {key: list(reversed(doc[key])) for key in reversed(list(doc))}
        ordered["addendums"] = [addendum(1)]
        ordered["clients"][0]["seller"] = 9  # a seller defined after the clients
        ordered["sellers"] = [{"id": 9, "email": "s@acme.example", "full_name": "Sam",
                               "reseller": 1000}]  # fmt: skip
        await load(session, ordered, box)
        assert await count(session, Addendum) == 1
        client = await session.get(Client, 2001)
        assert client is not None and client.seller_id == 9

    async def test_an_e_mail_of_another_stored_seller_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        reseller = await make_reseller(session)
        stored = await make_seller(session, reseller, email="Taken@R.example")
        await session.commit()
        doc = {"sellers": [{"id": stored.id + 1, "email": "taken@r.example", "full_name": "S",
                            "reseller": reseller.id}]}  # fmt: skip
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/sellers/0/email"]

    async def test_two_subscriptions_of_one_client_are_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        url = "amqp://u:p@mq.example:5672/%2F"
        doc["amqp_subscriptions"] = [
            {"id": 1, "client": 2001, "connection_string": url},
            {"id": 2, "client": 2001, "connection_string": url},
        ]
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == [
            "/amqp_subscriptions/1/client: already used by /amqp_subscriptions/0/client"
        ]

    async def test_duplicate_ids_are_rejected(self, session: AsyncSession, box: SecretBox) -> None:
        doc = example()
        doc["users"].append(dict(doc["users"][0]))
        error = await load_error(session, doc, box)
        assert [str(p) for p in error.problems] == ["/users/3/id: duplicate of /users/0"]


class TestSequences:
    async def test_new_rows_get_ids_above_the_imported_ones(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(
            session, {"clients": [{"id": 5000, "email": "a@b.example", "companyName": "A"}]}, box
        )
        client = Client(email="new@b.example", company_name="New")
        session.add(client)
        await session.commit()
        assert client.id > 5000

    async def test_big_addendum_ids_continue_too(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["addendums"] = [addendum(3_000_000_000)]
        await load(session, doc, box)
        when = datetime(2025, 1, 1, tzinfo=UTC)
        new = Addendum(
            client_id=2001, status="active", active_start=when, created_at=when, currency_id=2,
            currency_char_code="EUR", currency_symbol="€", plan_id=1, plan_name="p", product_id=5,
            product_name="Cloud", product_internal_name="CLOUD",
        )  # fmt: skip
        session.add(new)
        await session.commit()
        assert new.id > 3_000_000_000


class TestApiKeys:
    async def test_only_a_hash_is_stored_and_the_key_authenticates(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        key = await session.get(ApiKey, 3)
        assert key is not None and "client-secret" not in key.secret_hash
        caller = await authenticate(
            await session.connection(), parse_authorization("apikey 3_client-secret")
        )
        assert (caller.user_id, caller.account_id, caller.key_id) == (20, 2001, 3)

    async def test_the_superuser_flag_reaches_the_caller(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        caller = await authenticate(
            await session.connection(), parse_authorization("apikey 1_operator-secret")
        )
        assert caller.superuser

    async def test_a_wrong_secret_does_not_authenticate(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load(session, example(), box)
        with pytest.raises(TokenNotValid):
            await authenticate(
                await session.connection(), parse_authorization("apikey 3_other-secret")
            )

    async def test_the_legacy_dollar_form_is_accepted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["api_keys"][2]["key"] = "3$legacy-secret"
        await load(session, doc, box)
        caller = await authenticate(
            await session.connection(), parse_authorization("apikey 3$legacy-secret")
        )
        assert caller.key_id == 3

    async def test_a_key_naming_another_id_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["api_keys"][2]["key"] = "4_client-secret"
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/api_keys/2/key"]

    async def test_a_malformed_key_is_rejected(self, session: AsyncSession, box: SecretBox) -> None:
        doc = example()
        doc["api_keys"][0]["key"] = "operator-secret"
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/api_keys/0/key"]


class TestSecretsAtRest:
    async def test_the_mail_password_is_stored_encrypted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["branding"] = [{"reseller": 1000, "domain": "acme.example", "privateSettings": {
            "mailServer": {"tls": True, "host": "smtp.acme.example", "port": "587",
                           "login": "mailer", "password": "mail-pass-123"}}}]  # fmt: skip
        await load(session, doc, box)
        raw = (await session.execute(text("SELECT * FROM branding"))).one()
        assert "mail-pass-123" not in repr(tuple(raw))
        branding = await session.get(Branding, 1000)
        assert branding is not None
        assert branding.mail_server == {"tls": True, "host": "smtp.acme.example", "port": "587",
                                        "login": "mailer"}  # fmt: skip
        assert box.decrypt(branding.mail_password_encrypted or "") == "mail-pass-123"

    async def test_the_amqp_connection_string_is_stored_encrypted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        url = "amqps://shop:broker-pass@mq.shop.example:5671/events"
        doc["amqp_subscriptions"] = [{"id": 4, "client": 2001, "connection_string": url}]
        await load(session, doc, box)
        raw = (await session.execute(text("SELECT * FROM amqp_subscriptions"))).one()
        assert "broker-pass" not in repr(tuple(raw))
        sub = await session.get(AmqpSubscription, 4)
        assert sub is not None and box.decrypt(sub.connection_string_encrypted) == url


class TestPrices:
    async def test_decimals_are_kept_exactly(self, session: AsyncSession, box: SecretBox) -> None:
        doc = parse_document(
            '{"prices": [{"region_id": 76, "currency_code": "EUR",'
            ' "flavors": {"g1-standard-2-4": 0.0361000000000000000001},'
            ' "volume_types": {"ssd": 0.1}, "public_ipv4_per_hour": 0.0041, "tax_percent": 17.5}],'
            ' "regions": [{"id": 76, "name": "Luxembourg-2"}]}'
        )
        await load(session, doc, box)
        price = await session.get(PriceCatalogue, 76)
        assert price is not None
        assert price.flavors == {"g1-standard-2-4": "0.0361000000000000000001"}
        assert price.volume_types == {"ssd": "0.1"}
        assert (price.public_ipv4_per_hour, price.tax_percent, price.discount_percent) == (
            "0.0041", "17.5", "0"
        )  # fmt: skip
        assert Decimal(price.flavors["g1-standard-2-4"]) == Decimal("0.0361000000000000000001")

    async def test_a_price_for_an_unknown_region_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = {"prices": [{"region_id": 99, "currency_code": "EUR", "public_ipv4_per_hour": 1}]}
        error = await load_error(session, doc, box)
        assert [p.pointer for p in error.problems] == ["/prices/0/region_id"]


class TestTimestamps:
    async def test_offsets_are_stored_as_utc(self, session: AsyncSession, box: SecretBox) -> None:
        doc = example()
        doc["addendums"] = [addendum(1)]  # created_at 2024-12-24T10:00:00+02:00
        await load(session, doc, box)
        row = await session.get(Addendum, 1)
        assert row is not None
        assert row.created_at.isoformat() == "2024-12-24T08:00:00+00:00"
        assert row.active_end is None
