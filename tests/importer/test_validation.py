"""Field rules of the wire format (docs/import.md), at JSON pointers; nothing is written."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.importer import LoadError, load_document
from cloudadmin.kit.crypto import SecretBox
from tests.importer.documents import addendum, example, listener


async def problems_of(session: AsyncSession, box: SecretBox, **extra: Any) -> list[str]:
    doc = example()
    doc.update(extra)
    with pytest.raises(LoadError) as caught:
        await load_document(session, doc, box)
    await session.rollback()
    return [p.pointer for p in caught.value.problems]


async def accepted(session: AsyncSession, box: SecretBox, **extra: Any) -> None:
    doc = example()
    doc.update(extra)
    await load_document(session, doc, box)
    await session.rollback()


class TestListeners:
    async def test_a_complete_listener_is_accepted(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await accepted(
            session, box, listeners=[listener(task_id=None, allowed_cidrs=["10.0.0.0/8"])]
        )

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("protocol", "FTP"),
            ("operating_status", "online"),
            ("provisioning_status", "DONE"),
            ("protocol_port", 0),
            ("protocol_port", 65536),
            ("connection_limit", -2),
            ("connection_limit", 1_000_001),
            ("timeout_client_data", 86_400_001),
            ("id", "not-a-uuid"),
            ("task_id", "1234"),
            ("name", ""),
            ("name", "x" * 64),
            ("allowed_cidrs", ["10.0.0.0/33"]),
        ],
    )
    async def test_a_value_out_of_its_rules_is_rejected(
        self, session: AsyncSession, box: SecretBox, field: str, value: Any
    ) -> None:
        pointers = await problems_of(session, box, listeners=[listener(**{field: value})])
        assert pointers[0].startswith(f"/listeners/0/{field}")

    async def test_a_listener_of_an_unknown_project_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        assert await problems_of(session, box, listeners=[listener(project_id=99)]) == [
            "/listeners/0/project_id"
        ]

    async def test_required_fields_without_default_are_required(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        record = listener()
        del record["protocol"]
        assert await problems_of(session, box, listeners=[record]) == ["/listeners/0/protocol"]


class TestAddendums:
    @pytest.mark.parametrize(
        ("fields", "pointer"),
        [
            ({"status": "running"}, "/addendums/0/status"),
            ({"currency": {"id": 1, "char_code": "EUR", "symbol": "€"}},
             "/addendums/0/currency/id"),
            ({"product": {"id": 24, "name": "X", "internal_name": "X"}}, "/addendums/0/product/id"),
            ({"product": {"id": 5, "name": "Cloud", "internal_name": "CDN"}},
             "/addendums/0/product/internal_name"),
            ({"created_at": "2025-01-01T00:00:00"}, "/addendums/0/created_at"),
            ({"created_at": "yesterday"}, "/addendums/0/created_at"),
            ({"client": {"id": 1000, "company_name": "Acme"}}, "/addendums/0/client"),
            ({"reseller_id": -1}, "/addendums/0/reseller_id"),
            ({"client_id": 4242}, "/addendums/0/client_id"),
        ],
    )  # fmt: skip
    async def test_a_bad_addendum_is_rejected_at_its_field(
        self, session: AsyncSession, box: SecretBox, fields: dict[str, Any], pointer: str
    ) -> None:
        assert await problems_of(session, box, addendums=[addendum(1, **fields)]) == [pointer]

    async def test_errors_in_later_chunks_carry_their_own_index(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        records = [addendum(i + 1) for i in range(5_003)]
        records[5_002]["status"] = "bad"
        assert await problems_of(session, box, addendums=records) == ["/addendums/5002/status"]

    async def test_the_client_object_may_be_given(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        record = addendum(1, client={"id": 2001, "company_name": "Shop Ltd"})
        await accepted(session, box, addendums=[record])


class TestOtherRecords:
    async def test_a_lifecycle_schedule_must_be_cron_or_interval(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        policy = {"id": 1, "project_id": 11, "region_id": 76, "name": "p", "status": "active",
                  "user_id": 20, "schedules": [{"type": "weekly"}]}  # fmt: skip
        assert await problems_of(session, box, lifecycle_policies=[policy]) == [
            "/lifecycle_policies/0/schedules/0/type"
        ]

    async def test_a_cron_schedule_cannot_carry_interval_fields(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        schedule = {"type": "cron", "hour": "2", "hours": 6}
        policy = {"id": 1, "project_id": 11, "region_id": 76, "name": "p", "status": "active",
                  "user_id": 20, "schedules": [schedule]}  # fmt: skip
        assert await problems_of(session, box, lifecycle_policies=[policy]) == [
            "/lifecycle_policies/0/schedules/0/hours"
        ]

    @pytest.mark.parametrize(
        "url",
        ["http://u:p@h:5672/v", "amqp://h:5672/v", "amqp://u:p@h/v", "amqp://u:p@h:99999/v"],
    )
    async def test_an_amqp_connection_string_needs_its_shape(
        self, session: AsyncSession, box: SecretBox, url: str
    ) -> None:
        sub = {"id": 1, "client": 2001, "connection_string": url}
        assert await problems_of(session, box, amqp_subscriptions=[sub]) == [
            "/amqp_subscriptions/0/connection_string"
        ]

    async def test_an_unknown_group_is_rejected(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["users"][0]["groups"] = ["Administrators", "Wizards"]
        with pytest.raises(LoadError) as caught:
            await load_document(session, doc, box)
        assert [p.pointer for p in caught.value.problems] == ["/users/0/groups"]

    async def test_a_country_code_has_two_letters(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        doc = example()
        doc["clients"][1]["country_code"] = "DEU"
        with pytest.raises(LoadError) as caught:
            await load_document(session, doc, box)
        assert [p.pointer for p in caught.value.problems] == ["/clients/1/country_code"]

    async def test_a_string_is_not_an_integer(self, session: AsyncSession, box: SecretBox) -> None:
        doc = example()
        doc["projects"][0]["client"] = "2001"
        with pytest.raises(LoadError) as caught:
            await load_document(session, doc, box)
        assert [str(p) for p in caught.value.problems] == ["/projects/0/client: must be an integer"]

    async def test_a_notification_setting_needs_a_reseller(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        setting = {"id": 1, "reseller": 2001, "notification_type": "failed_login",
                   "email": "sec@shop.example"}  # fmt: skip
        assert await problems_of(session, box, notification_settings=[setting]) == [
            "/notification_settings/0/reseller"
        ]
