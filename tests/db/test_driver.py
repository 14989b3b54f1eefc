"""db/driver.py: statements on the driver connection give what SQLAlchemy gives, and
anything it cannot take goes SQLAlchemy's own way, with SQLAlchemy's errors."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Integer, bindparam, func, insert, select
from sqlalchemy.exc import IntegrityError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db import driver
from cloudadmin.db.engine import is_autocommit
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.db.request_db import ReadDatabase
from cloudadmin.web.app_state import app_state

LOG: Any = ActivityLogEntry.__table__
T0 = datetime(2025, 5, 15, 12, 0, tzinfo=UTC)


def entry(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "actions": f"action_{n}",
        "data": "",
        "user_email": f"u{n}@example.com",
        "client_id": n % 3,
        "token_id": None,
        "user_id": n,
        "requested_at": T0 + timedelta(minutes=n),
        "path": "/p",
        "method": "GET",
        "remote_ip_address": "127.0.0.1",
        "host": "h",
        "query_params": "",
        "status_code": 200,
        "reverted": False,
        "request_id": f"r{n}",
        **fields,
    }


async def add_entries(session: AsyncSession, n: int) -> None:
    await session.execute(insert(LOG), [entry(i) for i in range(1, n + 1)])
    await session.commit()


def filtered(client_ids: list[int], after: datetime) -> Any:
    """A statement with an expanding IN list, a UTC instant and a UTC column out, its
    values written into it."""
    return (
        select(LOG.c.id, LOG.c.requested_at, LOG.c.token_id)
        .where(LOG.c.client_id.in_(client_ids), LOG.c.requested_at > after)
        .order_by(LOG.c.id)
    )


@pytest.fixture
async def read_db(app: Any) -> Any:
    db = ReadDatabase(app_state(app).read_engine, app_state(app).read_sessionmaker)
    yield db
    await db.close()


class TestFetch:
    async def test_rows_and_types_are_sqlalchemys(
        self, read_db: ReadDatabase, session: AsyncSession
    ):
        await add_entries(session, 12)
        conn = await read_db.connection()
        assert is_autocommit(conn)
        stmt = filtered([0, 2], T0 + timedelta(minutes=3))
        expected = [tuple(r) for r in (await conn.execute(stmt)).all()]
        got = [tuple(r) for r in await driver.fetch(conn, driver.Static(stmt))]
        assert got == expected
        assert [i for i, _, _ in got] == [5, 6, 8, 9, 11, 12]
        assert all(at.tzinfo is not None and at.utcoffset() == timedelta(0) for _, at, _ in got)

    async def test_named_parameters_are_bound(self, read_db: ReadDatabase, session: AsyncSession):
        await add_entries(session, 4)
        conn = await read_db.connection()
        stmt = driver.Static(
            select(func.count()).select_from(LOG).where(LOG.c.user_id >= bindparam("u"))
        )
        assert await driver.scalar(conn, stmt, {"u": 3}) == 2
        assert await driver.scalar(conn, stmt, {"u": 1}) == 4


class TestStatic:
    """A statement built once, whose values come as named parameters."""

    STMT = driver.Static(
        select(LOG.c.id, LOG.c.requested_at)
        .where(
            LOG.c.client_id.in_(bindparam("clients", expanding=True)),
            LOG.c.requested_at > bindparam("after"),
            LOG.c.user_id + 0 > 0,
        )
        .order_by(LOG.c.id)
        .limit(bindparam("n", type_=Integer))
    )

    async def test_each_execution_takes_its_own_values(
        self, read_db: ReadDatabase, session: AsyncSession
    ):
        await add_entries(session, 12)
        conn = await read_db.connection()
        first = await driver.fetch(conn, self.STMT, {"clients": [1], "after": T0, "n": 10})
        again = await driver.fetch(
            conn, self.STMT, {"clients": [1, 2], "after": T0 + timedelta(minutes=7), "n": 3}
        )
        assert [r[0] for r in first] == [1, 4, 7, 10]
        assert [r[0] for r in again] == [8, 10, 11]
        assert all(at.utcoffset() == timedelta(0) for _, at in again)

    async def test_without_in_lists_sql_and_arguments_are_sqlalchemys(self, read_db: ReadDatabase):
        conn = await read_db.connection()
        after: Any = bindparam("after")
        stmt = driver.Static(
            select(LOG.c.id)
            .where(
                LOG.c.requested_at > after,
                LOG.c.user_id + 0 > 1,
                (LOG.c.requested_at < after + timedelta(days=1)),
            )
            .limit(bindparam("n", type_=Integer))
        )
        entry = stmt.entry(conn.dialect)
        assert entry.fixed is not None
        params = {"after": T0, "n": 7}
        assert (entry.fixed.sql, entry.fixed.arguments(params)) == driver._driver_arguments(
            entry, params
        )

    async def test_a_missing_value_is_sqlalchemys_error(self, read_db: ReadDatabase):
        conn = await read_db.connection()
        with pytest.raises(InvalidRequestError, match="'after'"):
            await driver.fetch(conn, self.STMT, {"clients": [1], "n": 1})

    async def test_inside_a_transaction_it_runs_through_sqlalchemy(self, session: AsyncSession):
        await add_entries(session, 6)
        conn = await session.connection()
        assert not is_autocommit(conn)
        rows = await driver.fetch(conn, self.STMT, {"clients": [0], "after": T0, "n": 5})
        assert [r[0] for r in rows] == [3, 6]

    async def test_an_insert_commits_on_its_own(self, read_db: ReadDatabase, session: AsyncSession):
        conn = await read_db.connection()
        values = {c.name: bindparam(c.name, type_=c.type) for c in LOG.columns if c.name != "id"}
        await driver.fetch(conn, driver.Static(insert(LOG).values(values)), entry(1))
        count = select(func.count()).select_from(LOG)
        assert (await session.execute(count)).scalar_one() == 1


class TestFallback:
    """A statement the driver refuses is replayed through SQLAlchemy: counted, logged."""

    @pytest.mark.driver_fallback
    async def test_a_refused_statement_raises_sqlalchemys_error(
        self, read_db: ReadDatabase, session: AsyncSession, caplog: pytest.LogCaptureFixture
    ):
        await add_entries(session, 1)
        conn = await read_db.connection()
        duplicate = insert(LOG).values(id=1, **entry(1))
        before = driver.fallback_count()
        with (
            caplog.at_level(logging.WARNING, logger="cloudadmin.db.driver"),
            pytest.raises(IntegrityError),
        ):  # a DBAPIError, not the driver's own
            await driver.fetch(conn, driver.Static(duplicate))
        assert driver.fallback_count() == before + 1
        [record] = caplog.records
        assert "replayed through SQLAlchemy" in record.getMessage()
        assert "INSERT INTO activity_log" in record.getMessage()

    async def test_any_other_error_propagates_as_it_is(
        self, read_db: ReadDatabase, monkeypatch: pytest.MonkeyPatch
    ):
        """A bug of the fast path is not hidden behind a replay that succeeds."""

        async def broken(*_: Any) -> list[Any]:
            raise KeyError("a bug")

        monkeypatch.setattr(driver, "_run_on_driver", broken)
        conn = await read_db.connection()
        before = driver.fallback_count()
        with pytest.raises(KeyError, match="a bug"):
            await driver.fetch(conn, driver.Static(select(LOG.c.id)))
        assert driver.fallback_count() == before

    async def test_hot_statements_take_the_driver_path(
        self, read_db: ReadDatabase, session: AsyncSession
    ):
        """Values bound as SQLAlchemy binds them: the database takes every one (the
        suite's guard fails any test whose statements were replayed)."""
        await add_entries(session, 3)
        conn = await read_db.connection()
        before = driver.fallback_count()
        rows = await driver.fetch(
            conn, TestStatic.STMT, {"clients": [0, 1, 2], "after": T0, "n": 5}
        )
        assert [r[0] for r in rows] == [1, 2, 3]
        assert driver.fallback_count() == before


class TestTransactions:
    async def test_a_change_runs_in_its_transaction(self, app: Any):
        """On a connection with a transaction the statement is SQLAlchemy's, so a
        rollback takes it back."""
        async with app_state(app).sessionmaker() as change:
            conn = await change.connection()
            assert not is_autocommit(conn)
            await driver.fetch(conn, driver.Static(insert(LOG).values(**entry(1))))
            await change.rollback()
        async with app_state(app).sessionmaker() as check:
            count = select(func.count()).select_from(LOG)
            assert (await check.execute(count)).scalar_one() == 0


class TestReadDatabase:
    async def test_a_read_opens_no_session_until_asked(self, read_db: ReadDatabase):
        conn = await read_db.connection()
        assert read_db._session is None
        session = await read_db.session()
        assert await session.connection() is conn
        assert await read_db.session() is session
