"""A price record is valid in a load document exactly when it is in a prices file, and
both store it the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.cloud.pricing.catalogue import PriceFileError, load_prices_file
from cloudadmin.db.models import PriceCatalogue
from cloudadmin.importer import load_document
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.web.app_state import app_state
from tests.facts.doors import base_landscape, importer_accepts

GOOD = {"region_id": 76, "currency_code": "EUR", "public_ipv4_per_hour": "0.005"}
CASES: list[tuple[dict[str, Any], bool]] = [
    (GOOD, True),
    ({**GOOD, "flavors": {"g1": 0.1}, "volume_types": {"ssd": "1e-4"}, "tax_percent": 19}, True),
    ({**GOOD, "discount_percent": 100}, True),
    ({**GOOD, "region_id": "76"}, False),
    ({**GOOD, "region_id": 2**31}, False),
    ({**GOOD, "region_id": 0}, False),
    ({**GOOD, "region_id": True}, False),
    ({**GOOD, "currency_code": "eur"}, False),
    ({**GOOD, "public_ipv4_per_hour": -1}, False),
    ({**GOOD, "public_ipv4_per_hour": "NaN"}, False),
    ({**GOOD, "public_ipv4_per_hour": True}, False),
    ({**GOOD, "tax_percent": 101}, False),
    ({**GOOD, "flavors": {"g1": "x"}}, False),
    ({**GOOD, "vat": 3}, False),
    ({"region_id": 76, "currency_code": "EUR"}, False),
]


async def file_accepts(app: Any, tmp_path: Path, record: dict[str, Any]) -> bool:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps([record]))
    try:
        await load_prices_file(app_state(app).sessionmaker, path)
    except PriceFileError:
        return False
    return True


async def stored_row(session: AsyncSession) -> dict[str, Any]:
    row = (
        await session.execute(select(PriceCatalogue).execution_options(populate_existing=True))
    ).scalar_one()
    await session.commit()
    return {c.name: getattr(row, c.name) for c in PriceCatalogue.__table__.columns}


class TestBothDoors:
    @pytest.mark.parametrize(("record", "valid"), CASES)
    async def test_same_outcome(
        self,
        app: Any,
        session: AsyncSession,
        box: SecretBox,
        tmp_path: Path,
        record: dict[str, Any],
        valid: bool,
    ) -> None:
        await base_landscape(session, box)
        imported = await importer_accepts(session, box, {"prices": [record]})
        from_file = await file_accepts(app, tmp_path, record)
        assert (imported, from_file) == (valid, valid)

    async def test_same_row(
        self, app: Any, session: AsyncSession, box: SecretBox, tmp_path: Path
    ) -> None:
        await base_landscape(session, box)
        record = {**GOOD, "flavors": {"g1": "0.0361000000000000000001"}, "tax_percent": 19}
        await load_document(session, {"prices": [record]}, box)
        await session.commit()
        imported = await stored_row(session)
        await session.execute(PriceCatalogue.__table__.delete())
        await session.commit()
        assert await file_accepts(app, tmp_path, record)
        assert await stored_row(session) == imported
