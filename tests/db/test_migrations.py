"""The models and the migrations describe the same schema, on both databases."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.config import Settings
from cloudadmin.db import models  # noqa: F401
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine


@pytest.fixture
async def engine(settings: Settings, database_url: str) -> AsyncEngine:
    eng = create_engine(settings, database_url)
    yield eng
    await eng.dispose()


class TestSchema:
    async def test_models_match_migrations(self, engine: AsyncEngine):
        def diff(conn):  # type: ignore[no-untyped-def]
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            return compare_metadata(ctx, Base.metadata)

        async with engine.connect() as conn:
            differences = await conn.run_sync(diff)
        assert differences == []

    async def test_constraints_follow_the_naming_convention(self, engine: AsyncEngine):
        def names(conn):  # type: ignore[no-untyped-def]
            insp = inspect(conn)
            out = []
            for table in insp.get_table_names():
                out += [fk["name"] for fk in insp.get_foreign_keys(table)]
                out += [ix["name"] for ix in insp.get_indexes(table)]
            return out

        async with engine.connect() as conn:
            found = await conn.run_sync(names)
        assert found and all(n and (n.startswith(("fk_", "ix_", "uq_"))) for n in found)

    async def test_groups_are_seeded(self, engine: AsyncEngine):
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT id, name FROM groups ORDER BY id"))).all()
        assert [tuple(r) for r in rows] == [
            (1, "Administrators"), (2, "Users"), (5, "Engineers"),
            (3009, "Purge and Prefetch only (API+Web)"), (3022, "Purge and Prefetch only (API)"),
        ]

    async def test_foreign_keys_are_enforced_at_commit(self, engine: AsyncEngine):
        from sqlalchemy.exc import IntegrityError

        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(text(
                    "INSERT INTO users (id, email, lang, client_id, deleted, activated, sso_auth,"
                    " two_fa, auth_types, user_type, is_active, superuser, date_joined)"
                    " VALUES (987654, 'x@example.com', 'en', 424242, false, true, false, false,"
                    " '[\"password\"]', 'common', true, false, CURRENT_TIMESTAMP)"))


class TestHistory:
    def test_one_head_and_full_downgrade(self, database_url: str):
        from alembic import command
        from alembic.script import ScriptDirectory

        from cloudadmin.db.migrate import alembic_config, upgrade

        config = alembic_config(database_url)
        assert len(ScriptDirectory.from_config(config).get_heads()) == 1
        command.downgrade(config, "base")
        upgrade(database_url)
