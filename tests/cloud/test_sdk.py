"""The provider's official SDK (``gcore``) reads every cloud answer that it has a method or
a model for: its own client, strict response validation, talking HTTP to the app (an
httpx client on the ASGI transport, given to the SDK as ``http_client``).

The SDK authenticates with ``Authorization: APIKey <key>`` and fills project and region from
the client's defaults (``cloud_project_id``, ``cloud_region_id``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import gcore
import httpx
import pytest
from gcore import AsyncGcore
from gcore.types.cloud.audit_log_entry import AuditLogEntry
from gcore.types.cloud.lifecycle_policy import LifecyclePolicy
from gcore.types.cloud.load_balancer_listener_detail import LoadBalancerListenerDetail
from gcore.types.cloud.task import Task
from gcore.types.cloud.task_id_list import TaskIDList
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.events.user_actions import Resource
from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_listener, make_policy
from tests.cloud.test_user_actions_log import act
from tests.provider.test_conformance import CRON, INTERVAL, OURS, VOLUMES

Call = Callable[[AsyncGcore, CloudLandscape, AsyncSession], Awaitable[list[Any]]]
CASES: dict[tuple[str, str], Call] = {}

# Cloud operations of ours the SDK (0.59) has neither a method nor a response model for.
NOT_IN_SDK = {
    ("POST", "/cloud/v2/pricing/{project_id}/{region_id}/k8s/clusters"),
    ("GET", "/cloud/v1/users"),  # the SDK has only /cloud/v1/users/assignments and roles
    ("POST", "/cloud/v1/user_actions/subscribe_amqp"),
    ("POST", "/cloud/v1/user_actions/subscribe_amqp_test"),
    ("POST", "/cloud/v1/user_actions/unsubscribe_amqp"),
    ("GET", "/cloud/v1/user_actions/amqp_subscriptions_list"),
    ("GET", "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}"),
    ("PATCH", "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}"),
    ("POST", "/cloud/v1/user_actions/subscribe"),
    ("POST", "/cloud/v1/user_actions/unsubscribe"),
    ("GET", "/cloud/v1/user_actions/subscriptions_list"),
}
SDK_SOURCE = Path(gcore.__file__).parent / "resources" / "cloud"


def case(method: str, path: str) -> Callable[[Call], Call]:
    def register(fn: Call) -> Call:
        CASES[(method, path)] = fn
        return fn

    return register


def ident(op: tuple[str, str]) -> str:
    return f"{op[0]} {op[1]}"


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


@pytest.fixture
async def sdk(app: object, cl: CloudLandscape) -> AsyncIterator[AsyncGcore]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport) as http:
        yield AsyncGcore(
            api_key=cl.ls.client_admin,
            base_url="http://testserver",
            http_client=http,
            cloud_project_id=cl.project,
            cloud_region_id=cl.region,
            max_retries=0,
            _strict_response_validation=True,  # a shape the model rejects raises
        )


@case("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}")
async def list_listeners(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    ids = {await make_listener(session, cl.project, cl.region) for _ in range(3)}
    await make_listener(session, cl.project, cl.region, secret_id=None, stats=None, user_list=[])
    page = await sdk.cloud.load_balancers.listeners.list(show_stats=True)
    walked = [x async for x in sdk.cloud.load_balancers.listeners.list(limit=2)]  # 2 pages
    assert page.count == 4 and len(walked) == 4 and ids < {x.id for x in walked}
    return [*page.results, *walked]


@case("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")
async def read_listener(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    bare = await make_listener(session, cl.project, cl.region, stats=None, user_list=[])
    got = await sdk.cloud.load_balancers.listeners.get(lid, show_stats=True)
    assert got.id == lid and got.stats is not None
    return [got, await sdk.cloud.load_balancers.listeners.get(bare)]


@case("PATCH", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")
async def rename_listener(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    # The SDK's update() calls the v2 PATCH; v1 through its own client, parsed by its model.
    lid = await make_listener(session, cl.project, cl.region)
    got = await sdk.patch(
        f"/cloud/v1/lblisteners/{cl.project}/{cl.region}/{lid}",
        body={"name": "web-1"},
        cast_to=LoadBalancerListenerDetail,
    )
    assert got.name == "web-1"
    return [got]


@case("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}/{policy_id}")
async def read_policy(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    pid = await make_policy(
        session, cl.project, cl.region, schedules=[CRON, INTERVAL], volumes=VOLUMES
    )
    plain = await sdk.cloud.snapshot_schedules.get(pid)
    full = await sdk.cloud.snapshot_schedules.get(pid, extra_query={"need_volumes": "true"})
    assert plain.volumes == [] and [v.volume_id for v in full.volumes] == [VOLUMES[0]["volume_id"]]
    assert [s.type for s in plain.schedules] == ["cron", "interval"]
    return [plain, full]


@case("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}")
async def list_policies(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    empty = await sdk.cloud.snapshot_schedules.list()
    assert empty.count == 0 and empty.results == []
    full = await make_policy(
        session, cl.project, cl.region, schedules=[CRON, INTERVAL], volumes=VOLUMES
    )
    bare = await make_policy(session, cl.project, cl.region, name="bare", status="paused")
    plain = await sdk.cloud.snapshot_schedules.list()
    volumes = await sdk.cloud.snapshot_schedules.list(extra_query={"need_volumes": "true"})
    assert plain.count == 2 and [p.id for p in plain.results] == [full, bare]
    assert [len(p.volumes) for p in volumes.results] == [1, 0]
    return [*plain.results, *volumes.results]


@case("GET", "/cloud/v1/user_actions")
async def list_user_actions(
    sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession
) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    await sdk.patch(
        f"/cloud/v1/lblisteners/{cl.project}/{cl.region}/{lid}",
        body={"name": "web-1"},
        cast_to=LoadBalancerListenerDetail,
    )
    # Without project, region or search field (an account-level action).
    await act(
        session,
        cl.ls.client_account,
        action_type="create",
        api_group="user",
        resources=[Resource("user", "u-5")],
    )
    page = await sdk.cloud.audit_logs.list()
    walked = [x async for x in sdk.cloud.audit_logs.list(limit=1, order_by="asc")]  # 2 pages
    only = await sdk.cloud.audit_logs.list(api_group=["lblistener"], project_id=[cl.project])
    assert page.count == 2 and [x.id for x in walked] == [x.id for x in reversed(page.results)]
    assert [r.search_field for x in only.results for r in x.resources] == ["web-1"]
    return [*page.results, *walked, *only.results]


@case("PATCH", "/cloud/v2/lblisteners/{project_id}/{region_id}/{listener_id}")
async def update_listener(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    ids = await sdk.cloud.load_balancers.listeners.update(lid, name="web-2")
    got = await sdk.cloud.load_balancers.listeners.update_and_poll(lid, name="web-3")
    assert got.name == "web-3"
    return [ids, got]


@case("GET", "/cloud/v1/tasks")
async def list_tasks(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    await sdk.cloud.load_balancers.listeners.update(lid, name="web-4")
    await sdk.cloud.load_balancers.listeners.update(lid, admin_state_up=False)  # ERROR
    page = await sdk.cloud.tasks.list()
    assert [t.state for t in page.results] == ["ERROR", "FINISHED"]
    return list(page.results)


@case("GET", "/cloud/v1/tasks/{task_id}")
async def read_task(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    ids = await sdk.cloud.load_balancers.listeners.update(lid, name="web-5")
    return [await sdk.cloud.tasks.get(ids.tasks[0])]


@case("POST", "/cloud/v1/tasks/{task_id}/acknowledge")
async def acknowledge_task(sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    ids = await sdk.cloud.load_balancers.listeners.update(lid, name="web-6")
    got = await sdk.cloud.tasks.acknowledge_one(ids.tasks[0])
    assert got.acknowledged_at is not None
    return [got]


@case("POST", "/cloud/v1/tasks/acknowledge_all")
async def acknowledge_all_tasks(
    sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession
) -> list[Any]:
    lid = await make_listener(session, cl.project, cl.region)
    await sdk.cloud.load_balancers.listeners.update(lid, name="web-7")
    assert await sdk.cloud.tasks.acknowledge_all() is None
    page = await sdk.cloud.tasks.list(is_acknowledged=True)
    assert page.count == 1
    return list(page.results)


CLOUD = [op for op in OURS if op[1].startswith("/cloud/")]


@pytest.mark.parametrize("op", CLOUD, ids=ident)
def test_has_an_sdk_case(op: tuple[str, str]) -> None:
    """Each cloud operation is read by the SDK, or the SDK has nothing for it (yet)."""
    if op in NOT_IN_SDK:
        quoted = f'"{op[1]}"'
        assert not any(quoted in f.read_text(encoding="utf-8") for f in SDK_SOURCE.rglob("*.py")), (
            f"the SDK has {ident(op)} now"
        )
        return
    assert op in CASES, f"{ident(op)} has no SDK case"


@pytest.mark.parametrize("op", sorted(CASES), ids=ident)
async def test_sdk_reads_the_answer(
    op: tuple[str, str], sdk: AsyncGcore, cl: CloudLandscape, session: AsyncSession
) -> None:
    parsed = await CASES[op](sdk, cl, session)
    assert parsed
    for model in parsed:
        assert isinstance(
            model, LoadBalancerListenerDetail | LifecyclePolicy | AuditLogEntry | Task | TaskIDList
        ), type(model)
