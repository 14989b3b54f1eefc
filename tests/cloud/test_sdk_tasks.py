"""The provider's SDK (``gcore``, strict response validation) on the listener's v2 PATCH
and the tasks: ``listeners.update`` and ``update_and_poll``, ``tasks.list``, ``get``,
``acknowledge_one``, ``acknowledge_all``; through the ASGI transport, and once over real
HTTP, where the task runs after the answer is sent and the SDK polls for it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from gcore import AsyncGcore
from gcore.types.cloud.load_balancer_listener_detail import LoadBalancerListenerDetail
from gcore.types.cloud.task import Task
from gcore.types.cloud.task_id_list import TaskIDList
from sqlalchemy.ext.asyncio import AsyncSession

from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_listener
from tests.cloud.tasks_helpers import stored_listener
from tests.servers import free_port
from tests.waiting import until


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def gcore_client(cl: CloudLandscape, base_url: str, http: httpx.AsyncClient | None) -> AsyncGcore:
    return AsyncGcore(
        api_key=cl.ls.client_admin,
        base_url=base_url,
        cloud_project_id=cl.project,
        cloud_region_id=cl.region,
        max_retries=0,
        _strict_response_validation=True,  # a shape the model rejects raises
        **({"http_client": http} if http is not None else {}),
    )


@pytest.fixture
async def sdk(app: object, cl: CloudLandscape) -> AsyncIterator[AsyncGcore]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport) as http:
        yield gcore_client(cl, "http://testserver", http)


class TestListenerUpdate:
    async def test_update_answers_the_task_and_update_and_poll_the_changed_listener(
        self, sdk: AsyncGcore, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        listeners = sdk.cloud.load_balancers.listeners
        ids = await listeners.update(lid, name="sdk-one", connection_limit=5000)
        assert isinstance(ids, TaskIDList) and len(ids.tasks) == 1
        task = await sdk.cloud.tasks.get(ids.tasks[0])
        assert isinstance(task, Task)
        assert task.state == "FINISHED" and task.task_type == "patch_lblistener"
        got = await listeners.update_and_poll(
            lid,
            name="sdk-two",
            allowed_cidrs=["198.51.100.0/24"],
            timeout_client_data=40000,
            user_list=[{"encrypted_password": "$5$y", "username": "sdk"}],
        )
        assert isinstance(got, LoadBalancerListenerDetail)
        assert got.name == "sdk-two" and got.connection_limit == 5000
        assert got.allowed_cidrs == ["198.51.100.0/24"] and got.task_id is None
        assert [u.username for u in got.user_list] == ["sdk"]

    async def test_update_and_poll_raises_the_tasks_error(
        self, sdk: AsyncGcore, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)  # HTTP: no certificate
        with pytest.raises(ValueError, match="secret_id applies only"):
            await sdk.cloud.load_balancers.listeners.update_and_poll(
                lid, name="never", secret_id=str(uuid.uuid4())
            )
        assert (await stored_listener(session, lid)).name == "http-80"


class TestTasks:
    async def test_list_get_and_acknowledge(
        self, sdk: AsyncGcore, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        listeners = sdk.cloud.load_balancers.listeners
        made = [(await listeners.update(lid, name=f"round-{i}")).tasks[0] for i in range(3)]
        failed = (await listeners.update(lid, admin_state_up=False)).tasks[0]
        page = await sdk.cloud.tasks.list()
        assert page.count == 4 and [t.id for t in page.results] == [failed, *made[::-1]]
        walked = [
            t.id
            async for t in sdk.cloud.tasks.list(
                state=["FINISHED"], project_id=[cl.project], order_by="asc", limit=2
            )
        ]  # two pages
        assert walked == made
        errors = await sdk.cloud.tasks.list(state=["ERROR"], task_type="patch_lblistener")
        assert [t.id for t in errors.results] == [failed]
        assert errors.results[0].error and errors.results[0].finished_on
        one = await sdk.cloud.tasks.get(made[0])
        assert one.id == made[0] and one.region_id == cl.region and one.acknowledged_at is None
        acknowledged = await sdk.cloud.tasks.acknowledge_one(made[0])
        assert acknowledged.acknowledged_by == cl.ls.admin_user.id
        assert acknowledged.acknowledged_at is not None
        assert (await sdk.cloud.tasks.list(is_acknowledged=True)).count == 1
        await sdk.cloud.tasks.acknowledge_all(project_id=cl.project, region_id=cl.region)
        assert (await sdk.cloud.tasks.list(is_acknowledged=False)).count == 0
        assert (await sdk.cloud.tasks.list(is_acknowledged=True)).count == 4


class TestOverHttp:
    async def test_update_and_poll_against_a_served_app(
        self, app: object, session: AsyncSession, cl: CloudLandscape
    ):
        """A real server answers the PATCH before the task runs (after the commit); the
        SDK polls the task until it is FINISHED and reads the listener."""
        lid = await make_listener(session, cl.project, cl.region)
        port = free_port()
        config = uvicorn.Config(
            app,  # type: ignore[arg-type]
            host="127.0.0.1",
            port=port,
            lifespan="off",
            log_level="warning",
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        try:
            await until(lambda: server.started or serving.done(), "the server to start")
            assert not serving.done(), "the server stopped"
            sdk = gcore_client(cl, f"http://127.0.0.1:{port}", None)
            got = await sdk.cloud.load_balancers.listeners.update_and_poll(
                lid, name="over-http", polling_interval_seconds=1, polling_timeout_seconds=60
            )
            assert got.name == "over-http" and got.task_id is None
            await sdk.close()
        finally:
            server.should_exit = True
            await serving
