"""The models and the migrations describe the same schema, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import bindparam, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.config import Settings
from cloudadmin.db import models  # noqa: F401
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine
from cloudadmin.db.types import UTCDateTime


@pytest.fixture
async def engine(settings: Settings, database_url: str) -> AsyncEngine:
    eng = create_engine(settings, database_url)
    yield eng
    await eng.dispose()


class TestSchema:
    async def test_models_match_migrations(self, engine: AsyncEngine):
        def diff(conn):  # type: ignore[no-untyped-def]
            def on_this_database(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]  # noqa: E501
                # An index the models declare for one database only (Index.ddl_if).
                only_on = getattr(obj, "info", {}).get("only_on")
                return only_on is None or only_on == conn.dialect.name

            ctx = MigrationContext.configure(
                conn, opts={"compare_type": True, "include_object": on_this_database}
            )
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
            (1, "Administrators"),
            (2, "Users"),
            (5, "Engineers"),
            (3009, "Purge and Prefetch only (API+Web)"),
            (3022, "Purge and Prefetch only (API)"),
        ]

    async def test_foreign_keys_are_enforced_at_commit(self, engine: AsyncEngine):
        from sqlalchemy.exc import IntegrityError

        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO users (id, email, lang, client_id, deleted, activated,"
                        " sso_auth, two_fa, auth_types, user_type, is_active, superuser,"
                        " date_joined)"
                        " VALUES (987654, 'x@example.com', 'en', 424242, false, true, false, false,"
                        " '[\"password\"]', 'common', true, false, CURRENT_TIMESTAMP)"
                    )
                )


@pytest.fixture
async def fresh_url(database_url: str, tmp_path):  # type: ignore[no-untyped-def]
    """An empty database of the same kind, migrated by the test itself."""
    from tests.databases import create_pg_database, drop_pg_database, postgres_base_url

    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
        return
    base = postgres_base_url()
    assert base is not None
    url = await create_pg_database(base)
    yield url
    await drop_pg_database(base, url)


class TestStartAtHead:
    """A start finds its schema current with two small queries, without Alembic."""

    async def test_an_empty_database_is_at_no_revision_until_migrated(self, fresh_url: str):
        import asyncio

        from cloudadmin.db.migrate import current_revision, head_revision, upgrade

        assert await asyncio.to_thread(current_revision, fresh_url) is None
        await asyncio.to_thread(upgrade, fresh_url)
        assert await asyncio.to_thread(current_revision, fresh_url) == head_revision()

    async def test_only_a_database_behind_the_head_reaches_alembic(
        self, fresh_url: str, monkeypatch: pytest.MonkeyPatch
    ):
        import asyncio

        from alembic import command

        from cloudadmin.db.migrate import alembic_config, current_revision, upgrade

        await asyncio.to_thread(upgrade, fresh_url)
        previous = await asyncio.to_thread(current_revision, fresh_url)
        await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "-1")
        behind = await asyncio.to_thread(current_revision, fresh_url)
        assert behind is not None and behind != previous
        await asyncio.to_thread(upgrade, fresh_url)  # Alembic runs the last migration again
        assert await asyncio.to_thread(current_revision, fresh_url) == previous

        def refused(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("Alembic was asked to upgrade a database at its head")

        monkeypatch.setattr(command, "upgrade", refused)
        await asyncio.to_thread(upgrade, fresh_url)


class TestHistory:
    async def test_one_head_and_full_downgrade(self, fresh_url: str):
        import asyncio

        from alembic import command
        from alembic.script import ScriptDirectory

        from cloudadmin.db.migrate import alembic_config, head_revision, upgrade

        config = alembic_config(fresh_url)
        assert ScriptDirectory.from_config(config).get_heads() == [head_revision()]
        await asyncio.to_thread(upgrade, fresh_url)
        await asyncio.to_thread(command.downgrade, config, "base")
        await asyncio.to_thread(upgrade, fresh_url)

    async def test_upgrade_keeps_stored_rows(self, fresh_url: str, settings: Settings):
        """A database holding data at the first release upgrades to the newest schema."""
        import asyncio

        from cloudadmin.db.migrate import upgrade

        await asyncio.to_thread(upgrade, fresh_url, "0002")
        engine = create_engine(settings, fresh_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO clients (id, email, status, company_name, capabilities,"
                        " service_statuses, paid_features, free_features, deleted, bill_type,"
                        " is_test, client_type, created_at) VALUES (7, 'a@example.com', 'active',"
                        " 'A', '[]', '{}', '{}', '{}', false, 'postpaid', false, 'common',"
                        " CURRENT_TIMESTAMP)"
                    )
                )
                await conn.execute(
                    text(
                        "INSERT INTO users (id, email, lang, client_id, deleted, activated,"
                        " sso_auth, two_fa, auth_types, user_type, is_active, superuser,"
                        " date_joined) VALUES (8, 'u@example.com', 'en', 7, false, true, false,"
                        " false, '[\"password\"]', 'common', true, false, CURRENT_TIMESTAMP)"
                    )
                )
                await conn.execute(
                    text(
                        "INSERT INTO addendums (id, client_id, status, active_start, created_at,"
                        " currency_id, currency_char_code, currency_symbol, plan_id, plan_name,"
                        " product_id, product_name, product_internal_name) VALUES (9, 7, 'active',"
                        " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1, 'USD', '$', 1, 'Plan Ä', 1,"
                        " 'CDN', 'CDN')"
                    )
                )
            await asyncio.to_thread(upgrade, fresh_url)
            async with engine.connect() as conn:
                assert (await conn.execute(text("SELECT count(*) FROM users"))).scalar() == 1
                assert (
                    await conn.execute(text("SELECT service_availability FROM clients"))
                ).scalar() in ({}, "{}")
                assert (await conn.execute(text("SELECT count(*) FROM addendums"))).scalar() == 1
                assert (
                    await conn.execute(text("SELECT company_name_folded FROM clients"))
                ).scalar() == "a"
        finally:
            await engine.dispose()


# An account for the addendums of the migration tests, in the columns of 0001.
CLIENT_7 = text(
    "INSERT INTO clients (id, email, status, company_name, capabilities, service_statuses,"
    " paid_features, free_features, deleted, bill_type, is_test, client_type, created_at)"
    " VALUES (7, 'a@example.com', 'active', 'A', '[]', '{}', '{}', '{}', false, 'postpaid',"
    " false, 'common', CURRENT_TIMESTAMP)"
)


class TestTotalsShards:
    """Migration 0009: addendum totals folded from 256 shards into 16, still exact."""

    @staticmethod
    async def _totals(conn) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
        rows, total, top = (
            await conn.execute(
                text(
                    "SELECT count(*), coalesce(sum(n), 0), coalesce(max(shard), -1) "
                    "FROM addendum_totals"
                )
            )
        ).one()
        return int(rows), int(total), int(top)

    async def test_upgrade_folds_and_downgrade_recounts(self, fresh_url: str, settings: Settings):
        import asyncio

        from alembic import command

        from cloudadmin.db.migrate import alembic_config, upgrade

        await asyncio.to_thread(upgrade, fresh_url, "0008")
        engine = create_engine(settings, fresh_url)
        insert = (
            "INSERT INTO addendums (id, client_id, status, active_start, created_at,"
            " currency_id, currency_char_code, currency_symbol, plan_id, plan_name,"
            " plan_name_folded, product_id, product_name, product_name_folded,"
            " product_internal_name) VALUES (:id, 7, 'active', CURRENT_TIMESTAMP,"
            " CURRENT_TIMESTAMP, 1, 'USD', '$', 1, 'P', 'p', 1, 'CDN', 'cdn', 'CDN')"
        )
        try:
            async with engine.begin() as conn:
                await conn.execute(CLIENT_7)
                # Same id % 16, different id % 256: one row each before, one after.
                for addendum_id in (5, 21, 37, 300):
                    await conn.execute(text(insert), {"id": addendum_id})
            async with engine.connect() as conn:
                assert await self._totals(conn) == (4, 4, 44)  # 300 % 256
            await asyncio.to_thread(upgrade, fresh_url)
            async with engine.begin() as conn:
                assert await self._totals(conn) == (2, 4, 12)  # shards 5 and 300 % 16
                await conn.execute(text(insert), {"id": 53})  # the triggers use 16 too
                await conn.execute(text("DELETE FROM addendums WHERE id = 300"))
            async with engine.connect() as conn:
                assert await self._totals(conn) == (2, 4, 12)
                assert (
                    await conn.execute(text("SELECT n FROM addendum_totals WHERE shard = 5"))
                ).scalar() == 4
            config = alembic_config(fresh_url)
            await asyncio.to_thread(command.downgrade, config, "0008")
            async with engine.connect() as conn:
                assert await self._totals(conn) == (4, 4, 53)
        finally:
            await engine.dispose()


class TestAddendumDays:
    """Migration 0011: addendums stored before it are counted per day, with id bounds."""

    async def test_upgrade_counts_stored_rows_and_downgrade_drops(
        self, fresh_url: str, settings: Settings
    ):
        import asyncio

        from alembic import command

        from cloudadmin.db.migrate import alembic_config, upgrade

        await asyncio.to_thread(upgrade, fresh_url, "0010")
        engine = create_engine(settings, fresh_url)
        insert = text(
            "INSERT INTO addendums (id, client_id, status, active_start, created_at,"
            " currency_id, currency_char_code, currency_symbol, plan_id, plan_name,"
            " plan_name_folded, product_id, product_name, product_name_folded,"
            " product_internal_name) VALUES (:id, 7, 'active', :created, :created, 1, 'USD',"
            " '$', 1, 'P', 'p', 1, 'CDN', 'cdn', 'CDN')"
        ).bindparams(bindparam("created", type_=UTCDateTime()))  # stored as the models store
        days = "SELECT day, shard, n, min_id, max_id FROM addendum_days ORDER BY day, shard"
        try:
            async with engine.begin() as conn:
                await conn.execute(CLIENT_7)
                # 1970-01-02 is day 1; ids 3 and 35 share shard 3.
                for addendum_id, created in (
                    (3, "1970-01-02 00:00:00"),
                    (35, "1970-01-02 23:59:59.999999"),
                    (4, "1970-01-01 23:59:59"),
                    (20, "1970-01-03 00:00:00"),
                ):
                    await conn.execute(insert, {"id": addendum_id, "created": _utc(created)})
            await asyncio.to_thread(upgrade, fresh_url)
            async with engine.begin() as conn:
                assert [tuple(r) for r in (await conn.execute(text(days))).all()] == [
                    (0, 4, 1, 4, 4),
                    (1, 3, 2, 3, 35),
                    (2, 4, 1, 20, 20),
                ]
                await conn.execute(insert, {"id": 51, "created": _utc("1970-01-02 12:00")})
            async with engine.connect() as conn:  # the triggers count from here on
                assert [tuple(r) for r in (await conn.execute(text(days))).all()][1] == (
                    1,
                    3,
                    3,
                    3,
                    51,
                )
            await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0010")
            async with engine.begin() as conn:
                assert "addendum_days" not in await conn.run_sync(
                    lambda c: inspect(c).get_table_names()
                )
                await conn.execute(insert, {"id": 67, "created": _utc("1970-01-05")})
        finally:
            await engine.dispose()


def _utc(text_: str) -> datetime:
    return datetime.fromisoformat(text_).replace(tzinfo=UTC)
