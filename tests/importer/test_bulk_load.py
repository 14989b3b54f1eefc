"""A large load into the empty addendums table on PostgreSQL goes by COPY (importer/bulk.py):
it stores exactly the rows and counters the upserts store, leaves the table with its
indexes, foreign key and triggers, and a problem found after the COPY leaves nothing."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.importer import LoadError, fast_json, load_document
from cloudadmin.importer.addendum_copy import AddendumJson
from cloudadmin.importer.bulk import KEPT_INDEXES, BulkLoad
from cloudadmin.kit.crypto import SecretBox
from tests.billing.helpers import days_match_rows
from tests.importer.test_bulk_counts import counters_match_rows, document

COUNTERS = ("addendum_counts", "addendum_totals", "addendum_days")


@pytest.fixture
def copied(monkeypatch: pytest.MonkeyPatch, dialect: str) -> list[int]:
    """Rows each COPY wrote (the real COPY runs); a 300-addendum load is a bulk one."""
    if dialect != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    monkeypatch.setattr(bulk_counts, "BULK_THRESHOLD", 100)
    sizes: list[int] = []
    copy = BulkLoad.copy

    async def counted(self: BulkLoad, columns: Any, rows: Any) -> None:
        sizes.append(0)

        def counting() -> Any:
            for batch in rows:
                sizes[-1] += len(batch)
                yield batch

        await copy(self, columns, counting())

    monkeypatch.setattr(BulkLoad, "copy", counted)
    return sizes


async def state(session: AsyncSession) -> dict[str, Any]:
    """Everything a load leaves in and around the addendums table."""
    out: dict[str, Any] = {}
    out["addendums"] = [
        tuple(r) for r in (await session.execute(text("SELECT * FROM addendums ORDER BY id"))).all()
    ]
    for table in COUNTERS:
        out[table] = sorted(
            tuple(r)
            for r in (await session.execute(text(f"SELECT * FROM {table} WHERE n <> 0"))).all()
        )
    out["indexes"] = (
        await session.execute(
            text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'addendums'"
                " ORDER BY 1"
            )
        )
    ).all()
    out["constraints"] = (
        await session.execute(
            text(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid IN ('addendums'::regclass, 'addendum_counts'::regclass)"
                " ORDER BY 1"
            )
        )
    ).all()
    # The foreign key's own triggers are renamed when it is added again.
    out["triggers"] = (
        await session.execute(
            text(
                "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'addendums'::regclass"
                " AND NOT tgisinternal ORDER BY 1"
            )
        )
    ).all()
    return out


async def upserted_state(
    session: AsyncSession, doc: dict[str, Any], box: SecretBox, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The state a row-by-row load of ``doc`` leaves (upserts, the triggers' counters),
    taken back afterwards: what the bulk load must leave too."""
    rolled_back = await session.begin()
    with monkeypatch.context() as m:
        m.setattr(bulk_counts, "BULK_THRESHOLD", 10_000)  # row by row
        await load_document(session, doc, box)
    upserted = await state(session)
    await rolled_back.rollback()
    return upserted


class TestBulkLoad:
    async def test_copy_stores_what_the_upserts_store(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        doc = document(1, 300)
        async with session.begin():
            before = await state(session)
        upserted = await upserted_state(session, doc, box, monkeypatch)
        assert copied == []
        async with session.begin():
            await load_document(session, doc, box)
        assert sum(copied) == 300
        bulk = await state(session)
        assert len(bulk["addendums"]) == 300
        assert bulk == upserted
        # The indexes, the foreign key and the triggers are back as they were.
        for part in ("indexes", "constraints", "triggers"):
            assert bulk[part] == before[part]
        await counters_match_rows(session)
        await days_match_rows(session, exact_bounds=True)
        analyzed = (
            await session.execute(
                text("SELECT reltuples FROM pg_class WHERE relname = 'addendums'")
            )
        ).scalar_one()
        assert analyzed == 300

    async def test_a_parsed_document_stores_what_the_upserts_store(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """As `cloudadmin load` parses a file: the addendums are structs (fast_json)."""
        doc = document(1, 300)
        parsed = fast_json.parse_bytes(json.dumps(doc).encode())
        assert all(type(a) is AddendumJson for a in parsed["addendums"])
        upserted = await upserted_state(session, doc, box, monkeypatch)
        async with session.begin():
            await load_document(session, parsed, box)
        assert sum(copied) == 300
        assert await state(session) == upserted
        await counters_match_rows(session)

    async def test_parsed_addendums_the_plain_check_refuses_read_as_the_models_say(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
    ) -> None:
        """Structs msgspec took but the plain check refuses (an unknown pairing of a
        currency, an impossible date): the models judge them, in the words they use
        for the same addendums as dicts."""
        doc = document(1, 300)
        doc["addendums"][10]["currency"] = {"id": 1, "char_code": "EUR", "symbol": "€"}
        doc["addendums"][20]["created_at"] = "2024-02-30T00:00:00Z"
        parsed = fast_json.parse_bytes(json.dumps(doc).encode())
        assert all(type(a) is AddendumJson for a in parsed["addendums"])
        found = []
        for given in (copy.deepcopy(doc), parsed):
            async with session.begin():
                with pytest.raises(LoadError) as caught:
                    await load_document(session, given, box)
            found.append([str(p) for p in caught.value.problems])
        assert found[0] == found[1]
        assert [p.split(":")[0] for p in found[1]] == [
            "/addendums/10/currency/id",
            "/addendums/20/created_at",
        ]
        assert copied == [0, 0]  # one COPY each, no row
        async with session.begin():
            assert (await session.execute(text("SELECT count(*) FROM addendums"))).scalar() == 0

    async def test_a_problem_after_the_copy_leaves_nothing(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
    ) -> None:
        async with session.begin():
            before = await state(session)
        doc = document(1, 300)
        # Found by the reference check, after every addendum was COPYed.
        doc["addendums"][-1]["client_id"] = 4242
        async with session.begin():
            with pytest.raises(LoadError) as caught:
                await load_document(session, doc, box)
            # Within the caller's transaction, which goes on: the savepoint took back
            # the rows, the dropped indexes and the switched-off triggers.
            assert await state(session) == before
        assert sum(copied) == 300
        assert [str(p) for p in caught.value.problems] == [
            "/addendums/299/client_id: no client with id 4242 in the document or the database"
        ]
        assert await state(session) == before

    async def test_a_field_problem_stops_the_copy(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
    ) -> None:
        doc = document(1, 12_000)  # three chunks
        doc["addendums"][6_000]["status"] = "lost"
        async with session.begin():
            with pytest.raises(LoadError):
                await load_document(session, doc, box)
        assert copied == [5_000]  # the first chunk, before the problem
        assert (await session.execute(text("SELECT count(*) FROM addendums"))).scalar_one() == 0

    async def test_counters_on_day_boundaries_are_the_triggers_counters(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Instants on either side of midnight UTC (in other offsets too), the first and
        last instants there are, with and without a reseller: the rebuilt counters are
        those the triggers keep row by row."""
        instants = [
            "2024-12-31T23:59:59.999999Z",
            "2025-01-01T00:00:00Z",
            "2025-01-01T01:59:59+02:00",  # 2024-12-31 UTC
            "2024-12-31T21:00:00-03:00",  # 2025-01-01 UTC
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999Z",
        ]
        doc = document(1, 300)
        for i, record in enumerate(doc["addendums"]):
            record["created_at"] = instants[i % len(instants)]
        upserted = await upserted_state(session, doc, box, monkeypatch)
        async with session.begin():
            await load_document(session, doc, box)
        assert sum(copied) == 300
        bulk = await state(session)
        for table in COUNTERS:
            assert bulk[table] == upserted[table], table
        assert {row[1] for row in bulk["addendum_counts"]} == {1000, -1}  # reseller_key
        await counters_match_rows(session)
        await days_match_rows(session, exact_bounds=True)

    async def test_counters_of_ids_in_any_order_are_the_triggers_counters(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The loader counts the COPYed rows itself (bulk_counts.RowCounter): a day's id
        bounds hold however the ids arrive."""
        doc = document(1, 300)
        random.Random(5).shuffle(doc["addendums"])
        upserted = await upserted_state(session, doc, box, monkeypatch)
        async with session.begin():
            await load_document(session, doc, box)
        assert sum(copied) == 300
        bulk = await state(session)
        for table in COUNTERS:
            assert bulk[table] == upserted[table], table
        await days_match_rows(session, exact_bounds=True)

    async def test_counters_are_stored_in_key_order(
        self, app: FastAPI, session: AsyncSession, box: SecretBox, copied: list[int]
    ) -> None:
        """addendum_counts' rows lie in the order of its key (bulk_counts.rebuild_counts
        says why; RowCounter gives them so), and the key it was built without is back."""
        async with session.begin():
            await load_document(session, document(1, 300), box)
        key = "client_id, reseller_key, status, product_id, shard"
        on_disk = (
            await session.execute(text(f"SELECT {key} FROM addendum_counts ORDER BY ctid"))
        ).all()
        by_key = (
            await session.execute(text(f"SELECT {key} FROM addendum_counts ORDER BY {key}"))
        ).all()
        assert len(on_disk) > 1 and on_disk == by_key
        primary = (
            await session.execute(
                text(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                    " WHERE conrelid = 'addendum_counts'::regclass AND contype = 'p'"
                )
            )
        ).scalar_one()
        assert primary == f"PRIMARY KEY ({key})"

    async def test_the_copy_keeps_up_the_kept_indexes_only(
        self,
        app: FastAPI,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The indexes bulk.KEPT_INDEXES names exist (a renamed one would quietly be set
        aside) and are the only secondary indexes while the rows go in."""
        query = text(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'addendums'"
            " AND indexname <> 'pk_addendums'"
        )
        async with session.begin():
            every = set((await session.execute(query)).scalars())
        assert every > KEPT_INDEXES  # all of them, and more
        during: set[str] = set()
        finish = BulkLoad.finish

        async def looked(self: BulkLoad) -> None:
            during.update((await self.conn.execute(query)).scalars())
            await finish(self)

        monkeypatch.setattr(BulkLoad, "finish", looked)
        async with session.begin():
            await load_document(session, document(1, 300), box)
        assert during == KEPT_INDEXES
        async with session.begin():
            assert set((await session.execute(query)).scalars()) == every
