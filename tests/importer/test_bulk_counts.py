"""A bulk load defers the addendum count triggers (PostgreSQL) and rebuilds the counters:
they end exactly as if every row had been counted by its trigger."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.importer import load_document
from cloudadmin.kit.crypto import SecretBox
from tests.billing.helpers import days_match_rows
from tests.importer.documents import addendum, example

STATUSES = ["active", "paused", "stopped", "upcoming"]


def document(first: int, count: int, days_later: int = 0) -> dict:  # type: ignore[type-arg]
    doc = example()
    doc["addendums"] = [
        addendum(
            i,
            status=STATUSES[i % 4],
            reseller_id=None if i % 3 else 1000,
            product={"id": 1 + i % 2, "name": "P", "internal_name": ["CDN", "STORAGE"][i % 2]},
            created_at=f"2024-12-{1 + (i + days_later) % 28:02d}T{i % 24:02d}:00:00Z",
        )
        for i in range(first, first + count)
    ]
    return doc


async def counters_match_rows(session: AsyncSession) -> None:
    truth = (
        await session.execute(
            text(
                "SELECT client_id, coalesce(reseller_id, -1), status, product_id, id % 16, count(*)"
                " FROM addendums GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
            )
        )
    ).all()
    kept = (
        await session.execute(
            text(
                "SELECT client_id, reseller_key, status, product_id, shard, n FROM addendum_counts"
                " WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5"
            )
        )
    ).all()
    assert [tuple(r) for r in kept] == [tuple(r) for r in truth]
    totals = (
        await session.execute(
            text(
                "SELECT status, product_id, sum(n) FROM addendum_totals GROUP BY 1, 2"
                " HAVING sum(n) <> 0 ORDER BY 1, 2"
            )
        )
    ).all()
    by_rows = (
        await session.execute(
            text("SELECT status, product_id, count(*) FROM addendums GROUP BY 1, 2 ORDER BY 1, 2")
        )
    ).all()
    assert [tuple(r) for r in totals] == [tuple(r) for r in by_rows]


class TestBulkCounts:
    async def test_counters_exact_after_bulk_then_small_load(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        monkeypatch: pytest.MonkeyPatch,
    ):
        monkeypatch.setattr(bulk_counts, "BULK_THRESHOLD", 100)
        async with session.begin():
            await load_document(session, document(1, 300), box)  # bulk on PostgreSQL
        await counters_match_rows(session)
        await days_match_rows(session, exact_bounds=True)
        async with session.begin():
            # Below the threshold the triggers count; some rows change status and day.
            doc = document(250, 60, days_later=1)
            await load_document(session, doc, box)
        await counters_match_rows(session)
        await days_match_rows(session)
