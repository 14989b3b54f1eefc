"""The demo landscape: a valid document whose keys authenticate."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.apikey import parse_authorization
from cloudadmin.auth.service import authenticate
from cloudadmin.db.models import Addendum, Listener
from cloudadmin.demo import build_demo
from cloudadmin.importer import load_document
from cloudadmin.kit.crypto import SecretBox


class TestDemo:
    async def test_the_document_loads_and_every_key_authenticates(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        document, keys = build_demo()
        report = await load_document(session, document, box)
        await session.commit()
        assert report.counts["addendums"] == 300
        kinds = {}
        for kind, token in keys.items():
            caller = await authenticate(
                await session.connection(), parse_authorization(f"apikey {token}")
            )
            kinds[kind] = caller
        assert kinds["operator"].superuser
        assert kinds["reseller"].account_type == "reseller"
        assert kinds["client_admin"].group_ids == {1}
        assert 5 in kinds["engineer"].group_ids
        assert kinds["client_member"].group_ids == {2}

    async def test_one_listener_is_locked_by_a_task(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load_document(session, build_demo()[0], box)
        locked = await session.execute(select(Listener).where(Listener.task_id.is_not(None)))
        assert len(locked.scalars().all()) == 1
        await session.rollback()

    async def test_content_is_deterministic_and_keys_are_fresh(self) -> None:
        (doc1, keys1), (doc2, keys2) = build_demo(), build_demo()
        doc1.pop("api_keys"), doc2.pop("api_keys")
        assert doc1 == doc2
        assert keys1["operator"] != keys2["operator"]
        assert keys1["operator"].split("_", 1)[0] == keys2["operator"].split("_", 1)[0]

    async def test_statuses_spread_over_every_value(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await load_document(session, build_demo()[0], box)
        rows = await session.execute(
            select(Addendum.status, func.count()).group_by(Addendum.status)
        )
        assert set(dict(rows.all())) == {"active", "upcoming", "paused", "stopped"}
        await session.rollback()
