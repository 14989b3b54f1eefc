"""GET /cloud/v1/tasks (filters, ordering, pages), GET one, the acknowledgements, who
sees what, and tasks that a stopped process left RUNNING."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.cloud.listeners import service as listeners
from cloudadmin.cloud.scoping import RegionPath
from cloudadmin.cloud.tasks import runner
from cloudadmin.cloud.tasks.service import LEASE
from cloudadmin.db.types import utcnow
from cloudadmin.web.app_state import app_state
from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_listener
from tests.cloud.tasks_helpers import (
    TASK_FIELDS,
    make_task,
    stored_listener,
    stored_task,
)
from tests.factories import auth
from tests.servers import free_port

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


async def listed(client: httpx.AsyncClient, key: str, **params: object) -> dict:
    r = await client.get("/cloud/v1/tasks", params=params, headers=auth(key))  # type: ignore[arg-type]
    assert r.status_code == 200, r.text
    return r.json()


def ids(page: dict) -> list[str]:
    return [t["id"] for t in page["results"]]


class TestList:
    async def test_filters_combine_and_each_list_matches_any_value(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = cl.ls.client_account.id
        a = await make_task(
            session, mine, created_on=T0, project_id=cl.project, region_id=cl.region
        )
        b = await make_task(
            session,
            mine,
            created_on=T0 + timedelta(hours=1),
            state="ERROR",
            error="refused",
            project_id=cl.project,
            region_id=cl.other_region,
            acknowledged_at=T0 + timedelta(hours=2),
            acknowledged_by=5,
        )
        c = await make_task(
            session,
            mine,
            created_on=T0 + timedelta(hours=2),
            state="RUNNING",
            finished_on=None,
            task_type="create_lblistener",
        )
        key = cl.ls.client_admin
        assert ids(await listed(client, key)) == [c, b, a]  # newest first
        assert ids(await listed(client, key, state=["ERROR", "RUNNING"])) == [c, b]
        assert ids(await listed(client, key, task_type="create_lblistener")) == [c]
        assert ids(await listed(client, key, project_id=cl.project)) == [b, a]
        assert ids(await listed(client, key, region_id=[cl.region, cl.other_region])) == [b, a]
        assert ids(await listed(client, key, region_id=cl.region, state="ERROR")) == []
        assert ids(await listed(client, key, is_acknowledged="true")) == [b]
        assert ids(await listed(client, key, is_acknowledged="false")) == [c, a]
        hour = (T0 + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        assert ids(await listed(client, key, from_timestamp=hour)) == [c, b]  # bounds included
        assert ids(await listed(client, key, to_timestamp=hour)) == [b, a]
        r = await client.get(
            "/cloud/v1/tasks", params={"state": "DONE"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400, r.text

    async def test_ordering_and_pages(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = cl.ls.client_account.id
        made = [
            await make_task(session, mine, created_on=T0 + timedelta(minutes=i)) for i in range(12)
        ]
        key = cl.ls.client_admin
        first = await listed(client, key)
        assert first["count"] == 12 and ids(first) == made[::-1][:10]  # the provider's 10
        assert set(first) == {"count", "results"}
        assert ids(await listed(client, key, offset=10)) == made[::-1][10:]
        assert ids(await listed(client, key, order_by="asc", limit=3, offset=2)) == made[2:5]
        assert ids(await listed(client, key, sorting="asc", limit=2)) == made[:2]
        assert ids(await listed(client, key, order_by="desc", limit=1000)) == made[::-1]
        for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"order_by": "up"}):
            r = await client.get("/cloud/v1/tasks", params=bad, headers=auth(key))
            assert r.status_code == 400, (bad, r.text)

    async def test_each_caller_sees_only_its_account_and_operators_all(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = await make_task(session, cl.ls.client_account.id, created_on=T0)
        theirs = await make_task(session, cl.foreign_account.id, created_on=T0)
        reseller = await make_task(session, cl.ls.reseller_account.id, created_on=T0)
        assert ids(await listed(client, cl.ls.client_admin)) == [mine]
        assert ids(await listed(client, cl.ls.client_member)) == [mine]
        assert ids(await listed(client, cl.foreign_admin)) == [theirs]
        # Like the listeners: a reseller sees its own account's, not its clients'.
        assert ids(await listed(client, cl.ls.reseller)) == [reseller]
        assert set(ids(await listed(client, cl.ls.operator))) == {mine, theirs, reseller}


class TestGet:
    async def test_every_field_and_another_accounts_task_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        tid = await make_task(session, cl.ls.client_account.id, created_on=T0)
        r = await client.get(f"/cloud/v1/tasks/{tid}", headers=auth(cl.ls.client_admin))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == TASK_FIELDS
        assert got["created_on"] == "2026-05-01T12:00:00Z"
        assert got["acknowledged_at"] is None and got["acknowledged_by"] is None
        for key in (cl.foreign_admin, cl.ls.reseller):
            r = await client.get(f"/cloud/v1/tasks/{tid}", headers=auth(key))
            assert r.status_code == 404, r.text
            assert r.json()["exception_class"] == "NotFoundError"
        r = await client.get("/cloud/v1/tasks/nothing-here", headers=auth(cl.ls.client_admin))
        assert r.status_code == 404, r.text
        r = await client.get(f"/cloud/v1/tasks/{tid}", headers=auth(cl.ls.operator))
        assert r.status_code == 200, r.text


class TestAcknowledge:
    async def test_one_is_acknowledged_once(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        tid = await make_task(session, cl.ls.client_account.id)
        other = await make_task(session, cl.ls.client_account.id)
        path = f"/cloud/v1/tasks/{tid}/acknowledge"
        r = await client.post(path, headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == TASK_FIELDS
        assert got["acknowledged_by"] == cl.ls.member_user.id
        assert got["acknowledged_at"] is not None
        again = (await client.post(path, headers=auth(cl.ls.client_admin))).json()
        assert again["acknowledged_by"] == cl.ls.member_user.id
        assert again["acknowledged_at"] == got["acknowledged_at"]
        assert (await stored_task(session, other)).acknowledged_at is None
        r = await client.post(path, headers=auth(cl.foreign_admin))
        assert r.status_code == 404, r.text

    async def test_all_of_the_callers_tasks_or_of_one_project_and_region(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = cl.ls.client_account.id
        here = await make_task(session, mine, project_id=cl.project, region_id=cl.region)
        there = await make_task(session, mine, project_id=cl.project, region_id=cl.other_region)
        elsewhere = await make_task(session, mine)
        theirs = await make_task(session, cl.foreign_account.id)
        key = cl.ls.client_admin
        r = await client.post(
            "/cloud/v1/tasks/acknowledge_all",
            params={"project_id": cl.project, "region_id": cl.region},
            headers=auth(key),
        )
        assert r.status_code == 204, r.text
        assert r.content == b""
        assert ids(await listed(client, key, is_acknowledged="true")) == [here]
        r = await client.post("/cloud/v1/tasks/acknowledge_all", headers=auth(key))
        assert r.status_code == 204, r.text
        assert set(ids(await listed(client, key, is_acknowledged="true"))) == {
            here,
            there,
            elsewhere,
        }
        assert (await stored_task(session, theirs)).acknowledged_at is None


def actor_of(cl: CloudLandscape) -> Actor:
    account = cl.ls.client_account
    caller = Caller(
        user_id=cl.ls.admin_user.id,
        user_email=cl.ls.admin_user.email,
        superuser=False,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=account.id,
        account_type=account.client_type,
        account_reseller_id=account.reseller_id,
    )
    return Actor(caller, "198.51.100.1", "test/1", "req-crashed")


async def left_running(app: object, cl: CloudLandscape, lid: str, changes: dict) -> str:
    """What a process that stopped right after answering the v2 PATCH leaves: the
    request's transaction committed (the task RUNNING, the listener locked), the task
    never run."""
    async with app_state(app).sessionmaker() as s:  # type: ignore[arg-type]
        ids_ = await listeners.start_update(
            s, actor_of(cl), RegionPath(cl.project, cl.region), lid, changes
        )
        await s.commit()
    return ids_.tasks[0]


class TestStranded:
    async def test_a_task_left_running_is_finished_once_its_lease_has_passed(
        self, app: object, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        tid = await left_running(app, cl, lid, {"name": "after-crash"})
        sessions = app_state(app).sessionmaker  # type: ignore[arg-type]
        task = await stored_task(session, tid)
        assert task.state == "RUNNING" and task.lease_expires_at is not None
        assert (await stored_listener(session, lid)).task_id == tid
        # Its process may still be at it: within the lease nobody else takes it.
        assert await runner.settle_stranded(sessions, utcnow()) == 0
        assert (await stored_task(session, tid)).state == "RUNNING"
        # The next pass after the lease (no waiting: the pass is told the time).
        later = utcnow() + LEASE + timedelta(seconds=1)
        assert await runner.settle_stranded(sessions, later) == 1
        task = await stored_task(session, tid)
        assert task.state == "FINISHED" and task.finished_on is not None
        assert task.lease_expires_at is None and task.error is None
        row = await stored_listener(session, lid)
        assert row.name == "after-crash" and row.task_id is None
        assert await runner.settle_stranded(sessions, later) == 0

    async def test_a_start_settles_every_running_task_and_an_impossible_one_ends_in_error(
        self, app: object, session: AsyncSession, cl: CloudLandscape
    ):
        ok = await make_listener(session, cl.project, cl.region)
        bad = await make_listener(session, cl.project, cl.region)
        finishes = await left_running(app, cl, ok, {"name": "restarted"})
        fails = await left_running(app, cl, bad, {"admin_state_up": False})
        sessions = app_state(app).sessionmaker  # type: ignore[arg-type]
        assert await runner.settle_stranded(sessions, None) == 2  # a start: lease or not
        assert (await stored_task(session, finishes)).state == "FINISHED"
        failed = await stored_task(session, fails)
        assert failed.state == "ERROR" and "cannot be disabled" in (failed.error or "")
        assert failed.finished_on is not None
        assert (await stored_listener(session, ok)).name == "restarted"
        assert (await stored_listener(session, bad)).task_id is None

    async def test_the_next_task_run_settles_a_stranded_one(
        self, app: object, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        tid = await left_running(app, cl, lid, {"name": "swept"})
        await _expire_lease(session, tid)
        other = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            f"/cloud/v2/lblisteners/{cl.project}/{cl.region}/{other}",
            json={"name": "trigger"},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 200, r.text
        assert (await stored_task(session, tid)).state == "FINISHED"
        assert (await stored_listener(session, lid)).name == "swept"

    async def test_a_task_is_finished_once_however_many_passes_try(
        self, app: object, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        tid = await left_running(app, cl, lid, {"name": "once-only"})
        sessions = app_state(app).sessionmaker  # type: ignore[arg-type]
        await asyncio.gather(*(runner.settle(sessions, tid) for _ in range(4)))
        task = await stored_task(session, tid)
        assert task.state == "FINISHED"
        finished_on = task.finished_on
        row = await stored_listener(session, lid)
        assert row.name == "once-only" and row.task_id is None
        row.name = "changed-since"
        await session.commit()
        await runner.settle(sessions, tid)  # a late pass: the task is not applied again
        assert (await stored_listener(session, lid)).name == "changed-since"
        assert (await stored_task(session, tid)).finished_on == finished_on

    async def test_a_database_out_of_reach_leaves_the_task_running_not_failed(
        self, app: object, session: AsyncSession, cl: CloudLandscape, database_url: str, tmp_path
    ):
        lid = await make_listener(session, cl.project, cl.region)
        tid = await left_running(app, cl, lid, {"name": "later"})
        if database_url.startswith("sqlite"):
            away = f"sqlite+aiosqlite:///{tmp_path / 'no-such-directory' / 'x.db'}"
        else:
            away = f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/none"
        engine = create_async_engine(away)
        try:
            unreachable = async_sessionmaker(engine)
            assert await runner.settle(unreachable, tid) is False
            await runner.run(unreachable, tid, retry_delays=(0, 0))
            assert await runner.settle_stranded(unreachable, None) == 0
        finally:
            await engine.dispose()
        assert (await stored_task(session, tid)).state == "RUNNING"
        assert (await stored_listener(session, lid)).task_id == tid
        sessions = app_state(app).sessionmaker  # type: ignore[arg-type]
        assert await runner.settle(sessions, tid) is True  # the database is back
        assert (await stored_task(session, tid)).state == "FINISHED"

    async def test_a_start_of_serve_settles_a_task_left_running(
        self, app: object, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        tid = await left_running(app, cl, lid, {"name": "at-start"})
        async with app.router.lifespan_context(app):  # type: ignore[attr-defined]
            pass
        assert (await stored_task(session, tid)).state == "FINISHED"
        assert (await stored_listener(session, lid)).name == "at-start"


async def _expire_lease(session: AsyncSession, task_id: str) -> None:
    task = await stored_task(session, task_id)
    task.lease_expires_at = utcnow() - timedelta(seconds=1)
    session.add(task)
    await session.commit()
