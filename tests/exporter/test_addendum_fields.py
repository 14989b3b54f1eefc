"""An addendum's fields through every path that carries them (billing/addendums/
fields.py): loaded, listed and exported, each field comes back as it went in."""

from __future__ import annotations

import json
from typing import Any

import httpx

from cloudadmin.billing.addendums import fields
from cloudadmin.config import Settings
from cloudadmin.importer import load_into
from tests.exporter.helpers import export_text
from tests.importer.documents import addendum, example

OPERATOR = {"Authorization": "apikey 1_operator-secret"}


def records() -> list[dict[str, Any]]:
    """Addendums with every stored field given (nulls and values), in the spelling the
    service writes."""
    return [
        addendum(1),
        addendum(
            2,
            payer_id=-5,
            provider_id=2**31 - 1,
            reseller_id=0,
            status="paused",
            active_range={"start": "2025-01-01T00:00:00.500000Z", "end": "2026-02-28T23:59:59Z"},
            created_at="2024-12-24T08:00:00Z",
            currency={"id": 1, "char_code": "USD", "symbol": "US$"},
            plan={"id": -(2**31), "name": 'Größe "Über" ǅ'},
            product={"id": 2, "name": "Storage", "internal_name": "STORAGE"},
            client={"id": 2001, "company_name": "ignored: the account's name is listed"},
        ),
    ]


def stored(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the table's stored fields have it (what the export writes)."""
    out: dict[str, Any] = {}
    for field in fields.STORED_FIELDS:
        group, _, key = field.path.rpartition(".")
        source = record.get(group, {}) if group else record
        (out.setdefault(group, {}) if group else out)[key] = source.get(key)
    return out


async def test_loaded_listed_and_exported_alike(settings: Settings, client: httpx.AsyncClient):
    given = records()
    given[0]["created_at"] = "2024-12-24T08:00:00Z"  # as the service spells it (UTC)
    await load_into(settings, {**example(), "addendums": given})

    listed = await client.get(
        "/billing/org/v1/addendums", params={"ordering": "id"}, headers=OPERATOR
    )
    assert listed.status_code == 200, listed.text
    items = listed.json()["results"]
    # The wire's keys, in order; status_at_active_at only comes with active_at.
    keys = dict.fromkeys(
        f.path.partition(".")[0] for f in fields.WIRE if f.origin != fields.COMPUTED
    )
    for item, record in zip(items, given, strict=True):
        expected = {k: v for k, v in stored(record).items() if k in keys}
        expected["client"] = {"id": record["client_id"], "company_name": "Shop Ltd"}
        assert item == expected
        assert list(item) == list(keys)

    exported = json.loads(await export_text(settings))["addendums"]
    assert exported == [stored(record) for record in given]
