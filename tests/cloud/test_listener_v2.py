"""PATCH /cloud/v2/lblisteners/...: a change that answers a task, the task's lock, and
the deprecated v1 PATCH beside it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.cloud.tasks import runner
from cloudadmin.db.models import Task
from tests.cloud.helpers import CloudLandscape, cloud_landscape, events, make_listener
from tests.cloud.tasks_helpers import TASK_FIELDS, stored_listener, v2_url
from tests.factories import auth


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


async def task_count(session: AsyncSession) -> int:
    n = (await session.execute(select(func.count()).select_from(Task))).scalar_one()
    await session.commit()
    return int(n)


class TestTaskAnswered:
    async def test_the_task_finishes_and_the_listener_is_changed(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        body = {
            "name": "web.front-2",
            "connection_limit": -1,
            "allowed_cidrs": ["192.0.2.0/24"],
            "timeout_client_data": 60000,
            "user_list": [{"encrypted_password": "$5$x", "username": "ops"}],
            "admin_state_up": True,
        }
        r = await client.patch(
            v2_url(cl.project, cl.region, lid), json=body, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        assert set(r.json()) == {"tasks"}
        [task_id] = r.json()["tasks"]
        # The ASGI transport answers once the app is done: the task has run.
        t = await client.get(f"/cloud/v1/tasks/{task_id}", headers=auth(cl.ls.client_admin))
        assert t.status_code == 200, t.text
        task = t.json()
        assert set(task) == TASK_FIELDS
        assert task["state"] == "FINISHED" and task["error"] is None
        assert task["task_type"] == "patch_lblistener"
        assert task["finished_on"] is not None and task["finished_on"].endswith("Z")
        assert task["created_on"] <= task["finished_on"]
        assert task["created_resources"] is None
        assert task["project_id"] == cl.project and task["region_id"] == cl.region
        assert task["client_id"] == cl.ls.client_account.id
        assert task["user_id"] == cl.ls.admin_user.id
        assert task["request_id"] == r.headers["X-Request-ID"]
        assert task["data"]["name"] == "web.front-2"
        for field in ("job_id", "schedule_id", "lifecycle_policy_id", "detailed_state"):
            assert task[field] is None
        got = (
            await client.get(
                f"/cloud/v1/lblisteners/{cl.project}/{cl.region}/{lid}",
                headers=auth(cl.ls.client_admin),
            )
        ).json()
        assert got["name"] == "web.front-2"
        assert got["connection_limit"] == 100000  # the provider's answer to -1
        assert got["allowed_cidrs"] == ["192.0.2.0/24"]
        assert got["timeout_client_data"] == 60000
        assert got["user_list"] == [{"encrypted_password": "$5$x", "username": "ops"}]
        assert got["task_id"] is None  # the lock is released
        assert got["timeout_member_connect"] == 5000  # not given: unchanged

    async def test_the_task_is_in_the_user_action_log_with_its_id(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            v2_url(cl.project, cl.region, lid),
            json={"name": "logged-1"},
            headers=auth(cl.ls.client_admin),
        )
        [task_id] = r.json()["tasks"]
        [event] = await events(session, "lblistener")
        assert event["task_id"] == task_id
        assert event["action_type"] == "update" and event["action_data"] == {"name": "logged-1"}
        assert event["resources"] == [
            {"resource_id": lid, "resource_type": "lblistener", "search_field": "logged-1"}
        ]
        log = (await client.get("/cloud/v1/user_actions", headers=auth(cl.ls.client_admin))).json()
        assert [x["task_id"] for x in log["results"]] == [task_id]

    async def test_an_engineer_may_and_another_account_sees_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        path = v2_url(cl.project, cl.region, lid)
        r = await client.patch(path, json={"name": "eng-1"}, headers=auth(cl.engineer))
        assert r.status_code == 200, r.text
        r = await client.patch(path, json={"name": "theirs"}, headers=auth(cl.foreign_admin))
        assert r.status_code == 404, r.text
        r = await client.patch(path, json={"name": "member"}, headers=auth(cl.ls.client_member))
        assert r.status_code == 403, r.text
        assert await task_count(session) == 1

    @pytest.mark.parametrize(
        "body",
        [
            {"name": "x"},
            {"name": None},
            {"connection_limit": -2},
            {"allowed_cidrs": ["not-a-network"]},
            {"user_list": [{"username": "a", "encrypted_password": "b"}] * 4},
            {"secret_id": "not-a-uuid"},
        ],
    )
    async def test_a_body_the_provider_refuses_is_400_and_starts_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, body
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            v2_url(cl.project, cl.region, lid), json=body, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400, r.text
        assert await task_count(session) == 0


class TestTaskFails:
    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({"name": "new-name", "secret_id": str(uuid.uuid4())}, "secret_id applies only"),
            ({"name": "new-name", "sni_secret_id": [str(uuid.uuid4())]}, "sni_secret_id"),
            ({"name": "new-name", "admin_state_up": False}, "cannot be disabled"),
        ],
    )
    async def test_what_the_load_balancer_refuses_ends_in_error_and_changes_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, body, error
    ):
        lid = await make_listener(session, cl.project, cl.region)  # an HTTP listener
        r = await client.patch(
            v2_url(cl.project, cl.region, lid), json=body, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        [task_id] = r.json()["tasks"]
        task = (
            await client.get(f"/cloud/v1/tasks/{task_id}", headers=auth(cl.ls.client_admin))
        ).json()
        assert task["state"] == "ERROR"
        assert error in task["error"]
        assert task["finished_on"] is not None
        row = await stored_listener(session, lid)
        assert row.name == "http-80" and row.task_id is None and row.secret_id is None

    async def test_a_secret_on_a_terminated_https_listener_is_taken(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region, protocol="TERMINATED_HTTPS")
        secret = str(uuid.uuid4())
        r = await client.patch(
            v2_url(cl.project, cl.region, lid),
            json={"secret_id": secret, "sni_secret_id": [secret]},
            headers=auth(cl.ls.client_admin),
        )
        [task_id] = r.json()["tasks"]
        task = (
            await client.get(f"/cloud/v1/tasks/{task_id}", headers=auth(cl.ls.client_admin))
        ).json()
        assert task["state"] == "FINISHED", task
        row = await stored_listener(session, lid)
        assert row.secret_id == secret and row.sni_secret_id == [secret]


def held_runner(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """The task runner waits for ``release`` before it runs (``entered`` set): the task
    stays RUNNING, deterministically, for as long as the test wants."""
    entered, release = asyncio.Event(), asyncio.Event()
    real: Callable[..., Awaitable[None]] = runner.run

    async def held(*args: object) -> None:
        entered.set()
        await release.wait()
        await real(*args)

    monkeypatch.setattr(runner, "run", held)
    return entered, release


class TestLock:
    async def test_a_change_while_the_task_runs_is_409(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        monkeypatch: pytest.MonkeyPatch,
    ):
        lid = await make_listener(session, cl.project, cl.region)
        path = v2_url(cl.project, cl.region, lid)
        entered, release = held_runner(monkeypatch)
        first = asyncio.create_task(
            client.patch(path, json={"name": "first-1"}, headers=auth(cl.ls.client_admin))
        )
        await asyncio.wait_for(entered.wait(), 20)
        try:
            locked = await stored_listener(session, lid)
            task_id = locked.task_id
            assert task_id is not None
            task = (
                await client.get(f"/cloud/v1/tasks/{task_id}", headers=auth(cl.ls.client_admin))
            ).json()
            assert task["state"] == "RUNNING" and task["finished_on"] is None
            second = await client.patch(
                path, json={"name": "second-2"}, headers=auth(cl.ls.client_admin)
            )
            assert second.status_code == 409, second.text
            assert second.json()["exception_class"] == "ConflictError"
            assert task_id in second.json()["message"]
            v1 = await client.patch(
                f"/cloud/v1/lblisteners/{cl.project}/{cl.region}/{lid}",
                json={"name": "second-2"},
                headers=auth(cl.ls.client_admin),
            )
            assert v1.status_code == 409, v1.text
        finally:
            release.set()
        r = await first
        assert r.json() == {"tasks": [task_id]}
        row = await stored_listener(session, lid)
        assert row.name == "first-1" and row.task_id is None
        assert await task_count(session) == 1  # the refused change started no task
        # Unlocked: the next change goes through.
        r = await client.patch(path, json={"name": "third-3"}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 200, r.text
        assert (await stored_listener(session, lid)).name == "third-3"


class TestDeprecatedV1:
    async def test_v1_patch_is_deprecated_and_v2_is_not(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        v1 = spec["paths"]["/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}"]
        v2 = spec["paths"]["/cloud/v2/lblisteners/{project_id}/{region_id}/{listener_id}"]
        assert v1["patch"]["deprecated"] is True
        assert "deprecated" not in v2["patch"]
        assert v1["get"].get("deprecated") is None
