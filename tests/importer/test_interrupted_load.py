"""A `cloudadmin load` killed after its COPY, before it commits, leaves the database as
it was: no addendum, every index, foreign key and trigger back, no counter."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.config import Settings
from tests.importer.test_bulk_counts import document
from tests.importer.test_bulk_load import state

pytestmark = pytest.mark.slow


async def the_load_waits_on_a_lock(session: AsyncSession) -> bool:
    """Another connection to this test's database waits for a lock (ours)."""
    await session.execute(text("SELECT pg_stat_clear_snapshot()"))
    waiting = await session.execute(
        text(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
    )
    return waiting.first() is not None


async def test_a_load_killed_before_it_commits_leaves_the_database_as_it_was(
    settings: Settings, session: AsyncSession, dialect: str, tmp_path: Path
) -> None:
    if dialect != "postgresql":
        pytest.skip("the bulk load is PostgreSQL's")
    async with session.begin():
        before = await state(session)
    count = bulk_counts.BULK_THRESHOLD + 1_000  # a bulk load: one COPY
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document(1, count)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDADMIN_")}
    env.update(
        CLOUDADMIN_DATABASE_URL=str(settings.database_url),
        CLOUDADMIN_SECRET_KEY="test-secret-key",
        CLOUDADMIN_DATA_DIR=str(tmp_path / "data"),
    )
    transaction = await session.begin()
    # The load writes the API keys after its COPY: it waits there, holding every
    # addendum, its indexes set aside and its triggers off, uncommitted.
    await session.execute(text("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE"))
    load = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cloudadmin", "load", str(path),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        for _ in range(1_200):
            if load.returncode is not None or await the_load_waits_on_a_lock(session):
                break
            await asyncio.sleep(0.1)
        assert load.returncode is None, await load.communicate()
        assert await the_load_waits_on_a_lock(session), "the load never waited"
        copied = await session.execute(text("SELECT pg_relation_size('addendums')"))
        assert copied.scalar_one() > 0  # its rows are in the table's file, uncommitted
        load.kill()  # SIGKILL: nothing of the load's own runs
    finally:
        if load.returncode is None:
            load.kill()
        await load.communicate()
        await transaction.rollback()
    # The server ends the killed client's transaction when it notices the closed
    # connection; until then its locks keep the table.
    for _ in range(600):
        async with session.begin():
            await session.execute(text("SELECT pg_stat_clear_snapshot()"))
            gone = await session.execute(
                text(
                    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                    " WHERE c.relname = 'addendums' AND l.mode = 'AccessExclusiveLock'"
                )
            )
            if gone.scalar_one() == 0:
                break
        await asyncio.sleep(0.1)
    async with session.begin():
        assert await state(session) == before
        assert (await session.execute(text("SELECT count(*) FROM addendums"))).scalar() == 0
