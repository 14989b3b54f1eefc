"""ApiRoute: reads run without an explicit transaction; lost connections are survived."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.engine import create_engine
from cloudadmin.db.models import ActivityLogEntry, Seller
from cloudadmin.web.app_state import app_state
from cloudadmin.web.route import ApiRoute, answers, describe
from tests.factories import Landscape, auth, landscape, make_seller

SELLERS = "/iam/admin/sellers"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


async def log_rows(session: AsyncSession) -> int:
    return int(
        (await session.execute(select(func.count()).select_from(ActivityLogEntry))).scalar_one()
    )


async def kill_pooled_connections(settings: object) -> None:
    """What a database restart does to the service's pool: its connections die."""
    engine = create_engine(settings)  # type: ignore[arg-type]
    try:
        async with engine.connect() as conn:
            await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
    finally:
        await engine.dispose()


class TestReads:
    async def test_a_read_writes_its_log_row(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        before = await log_rows(session)
        await session.commit()  # SQLite: let go of the write lock
        r = await client.get(f"{SELLERS}/{seller.id}", headers=auth(ls.operator))
        assert r.status_code == 200, r.text
        await session.commit()
        assert await log_rows(session) == before + 1

    async def test_a_read_handler_cannot_write(
        self, app: object, session: AsyncSession, ls: Landscape
    ):
        async with app_state(app).read_sessionmaker() as read:  # type: ignore[attr-defined]
            read.add(
                Seller(reseller_id=ls.reseller_account.id, email="x@example.com", full_name="X")
            )
            with pytest.raises(RuntimeError, match="read-only"):
                await read.flush()


async def seller_behind_a_restarted_database(
    settings: object,
    client: httpx.AsyncClient,
    ls: Landscape,
    session: AsyncSession,
    dialect: str,
) -> str:
    """A seller's URL, read once (the pool then holds a connection), then the database's
    connections killed."""
    if dialect != "postgresql":
        pytest.skip("SQLite has no server to restart")
    seller = await make_seller(session, ls.reseller_account)
    await session.commit()
    await session.close()
    url = f"{SELLERS}/{seller.id}"
    assert (await client.get(url, headers=auth(ls.operator))).status_code == 200
    await kill_pooled_connections(settings)
    return url


class TestLostConnections:
    @pytest.fixture(autouse=True)
    async def own_pool(self, app: object) -> AsyncIterator[None]:
        """The kept pool (tests/routed_apps.py) starts empty, as in a new process, and is
        left empty: the test kills every connection it held."""
        await app_state(app).engine.dispose()  # type: ignore[arg-type]
        yield
        await app_state(app).engine.dispose()  # type: ignore[arg-type]

    # The key lookup meets the dead connection on the driver path: replayed through
    # SQLAlchemy, which flags it invalidated (db/driver.py).
    @pytest.mark.driver_fallback
    async def test_a_read_runs_again_on_a_fresh_connection(
        self,
        settings: object,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        dialect: str,
    ):
        url = await seller_behind_a_restarted_database(settings, client, ls, session, dialect)
        r = await client.get(url, headers=auth(ls.operator))
        assert r.status_code == 200, r.text

    async def test_a_change_answers_503_and_the_next_one_works(
        self,
        settings: object,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        dialect: str,
    ):
        url = await seller_behind_a_restarted_database(settings, client, ls, session, dialect)
        lost = await client.patch(
            url, json={"email": "lost@example.com", "full_name": "Lost"}, headers=auth(ls.operator)
        )
        assert lost.status_code == 503, lost.text
        assert "retry-after" in lost.headers
        kept = await client.patch(
            url, json={"email": "kept@example.com", "full_name": "Kept"}, headers=auth(ls.operator)
        )
        assert kept.status_code == 200, kept.text
        assert kept.json()["full_name"] == "Kept"


class TestBusyPool:
    async def test_a_request_that_cannot_get_a_connection_answers_503(
        self, settings: object, ls: Landscape, dialect: str
    ):
        if dialect != "postgresql":
            pytest.skip("the SQLite engine keeps SQLAlchemy's default pool")
        from cloudadmin.app import create_app

        app = create_app(
            settings.model_copy(  # type: ignore[attr-defined]
                update={"db_pool_size": 1, "db_pool_timeout": 0.2, "run_dispatcher": False}
            )
        )
        transport = httpx.ASGITransport(app=app)
        try:
            async with app_state(app).engine.connect() as held:  # the pool's one connection
                await held.execute(text("SELECT 1"))
                async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                    r = await c.get(f"{SELLERS}/1", headers=auth(ls.operator))
            assert r.status_code == 503, r.text
            assert r.json()["exception_class"] == "ServiceUnavailable"
            assert "retry-after" in r.headers
        finally:
            await app_state(app).engine.dispose()


class TestDeclarations:
    """What a handler says once (ApiRoute)."""

    async def test_a_handler_returning_nothing_answers_no_body(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        seller = await make_seller(session, ls.reseller_account)
        await session.commit()
        r = await client.delete(f"{SELLERS}/{seller.id}", headers=auth(ls.operator))
        assert r.status_code == 204, r.text
        # Not a JSON null, nor a JSON content type for nothing.
        assert r.content == b"" and "content-type" not in r.headers

    def test_a_handler_returning_nothing_is_204_unless_its_decorator_names_another(self):
        async def nothing() -> None:
            """Does it."""

        assert ApiRoute("/x", nothing, methods=["POST"]).status_code == 204
        named = ApiRoute("/x", nothing, methods=["DELETE"], **answers(200, "Deleted."))
        assert named.status_code == 200

        async def something() -> dict[str, int]:
            return {}

        assert ApiRoute("/x", something, methods=["POST"]).status_code is None  # FastAPI's 200

    def test_a_description_joins_the_lines_of_each_paragraph(self):
        doc = """One line
        and the next.

        A second paragraph."""
        assert describe(doc) == "One line and the next.\n\nA second paragraph."
