"""The walk's cases for ``client.cloud``: listeners (read, the v2 change and its task,
``update_and_poll``), tasks, snapshot schedules and the user-action log, on the demo's
projects.

Each case that starts a task waits for it to finish (``tasks.poll``), so that no case
leaves work running into the next one's reads.
"""

from __future__ import annotations

from typing import Any

import gcore
import pytest
from gcore.types.cloud.load_balancer_listener_detail import LoadBalancerListenerDetail

from cloudadmin.demo.landscape import REGION
from tests.sdk.walk import PROJECT, Demo, covers

V1_LISTENER = "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}"


async def listener_named(demo: Demo, name: str, kind: str = "client_admin") -> str:
    """The demo's listener of that name (as the demo made it: cases that rename one
    rename it back or keep to their own)."""
    listeners = demo.sdk(kind).cloud.load_balancers.listeners
    found = [x async for x in listeners.list() if x.name == name]
    assert len(found) == 1, name
    return found[0].id


@covers("cloud.load_balancers.listeners.list")
async def list_listeners(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    page = await sdk.cloud.load_balancers.listeners.list(show_stats=True)
    walked = [x async for x in sdk.cloud.load_balancers.listeners.list(limit=2)]  # 2 pages
    assert page.count == 3 and len(walked) == 3
    assert {x.id for x in walked} == {x.id for x in page.results}
    assert all(x.stats is not None for x in page.results)
    named = await sdk.cloud.load_balancers.listeners.list(name="metrics")  # never renamed
    assert [x.name for x in named.results] == ["metrics"]
    other = await demo.sdk("other_client_admin").cloud.load_balancers.listeners.list()
    assert other.count == len(other.results) == 1
    return [*page.results, *walked, *named.results, *other.results]


@covers("cloud.load_balancers.listeners.get")
async def read_listeners(demo: Demo) -> list[Any]:
    parsed = []
    for kind in ("client_admin", "other_client_admin"):
        listeners = demo.sdk(kind).cloud.load_balancers.listeners
        async for listener in listeners.list():
            with_stats = await listeners.get(listener.id, show_stats=True)
            bare = await listeners.get(listener.id)
            assert with_stats.id == bare.id == listener.id and with_stats.stats is not None
            parsed += [with_stats, bare]
    assert len(parsed) == 8
    return parsed


@covers("cloud.load_balancers.listeners.update", "cloud.tasks.poll", "cloud.tasks.get")
async def change_listener(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    lid = await listener_named(demo, "web-http")
    answer = await sdk.cloud.load_balancers.listeners.update(
        lid, name="web-plain", connection_limit=5000, allowed_cidrs=["10.0.0.0/8"]
    )
    assert len(answer.tasks) == 1
    task = await sdk.cloud.tasks.poll(answer.tasks[0])
    assert task.state == "FINISHED" and task.task_type == "patch_lblistener"
    assert task.project_id == PROJECT and task.region_id == REGION
    read = await sdk.cloud.tasks.get(task.id)
    assert read.finished_on is not None
    changed = await sdk.cloud.load_balancers.listeners.get(lid)
    assert (changed.name, changed.connection_limit) == ("web-plain", 5000)
    assert changed.allowed_cidrs == ["10.0.0.0/8"]
    return [answer, task, read, changed]


@covers("cloud.load_balancers.listeners.update_and_poll")
async def change_listener_and_wait(demo: Demo) -> list[Any]:
    sdk = demo.sdk("other_client_admin")
    lid = await listener_named(demo, "orders-tcp", "other_client_admin")
    changed = await sdk.cloud.load_balancers.listeners.update_and_poll(
        lid, name="orders", timeout_client_data=60_000
    )
    assert changed.id == lid and changed.name == "orders"
    assert changed.timeout_client_data == 60_000
    return [changed]


@covers("cloud.load_balancers.listeners.update")
async def locked_listener(demo: Demo) -> list[Any]:
    """The demo's metrics listener is held by a task: a change is the API's 409."""
    sdk = demo.sdk("client_admin")
    lid = await listener_named(demo, "metrics")
    with pytest.raises(gcore.ConflictError):
        await sdk.cloud.load_balancers.listeners.update(lid, name="metrics-2")
    return [await sdk.cloud.load_balancers.listeners.get(lid)]


@covers(
    "cloud.load_balancers.listeners.update",
    "cloud.tasks.poll",
    "cloud.tasks.list",
    "cloud.tasks.get",
    "cloud.tasks.acknowledge_one",
    "cloud.tasks.acknowledge_all",
)
async def tasks(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    lid = await listener_named(demo, "web-https")
    ids = []
    for limit in (2000, 3000):
        answer = await sdk.cloud.load_balancers.listeners.update(lid, connection_limit=limit)
        ids.append((await sdk.cloud.tasks.poll(answer.tasks[0])).id)
    mine = [t async for t in sdk.cloud.tasks.list(project_id=[PROJECT], limit=1)]  # paged
    assert set(ids) <= {t.id for t in mine}
    finished = [t async for t in sdk.cloud.tasks.list(state=["FINISHED"], region_id=[REGION])]
    assert set(ids) <= {t.id for t in finished}
    acknowledged = await sdk.cloud.tasks.acknowledge_one(ids[0])
    assert acknowledged.id == ids[0] and acknowledged.acknowledged_at is not None
    waiting = [t async for t in sdk.cloud.tasks.list(is_acknowledged=False, project_id=[PROJECT])]
    assert ids[0] not in {t.id for t in waiting} and ids[1] in {t.id for t in waiting}
    await sdk.cloud.tasks.acknowledge_all(project_id=PROJECT, region_id=REGION)
    left = await sdk.cloud.tasks.list(is_acknowledged=False, project_id=[PROJECT])
    assert left.count == 0 and left.results == []
    read = await sdk.cloud.tasks.get(ids[1])
    assert read.acknowledged_by is not None
    return [*mine, *finished, acknowledged, *waiting, read]


@covers("cloud.snapshot_schedules.list", "cloud.snapshot_schedules.get")
async def snapshot_schedules(demo: Demo) -> list[Any]:
    parsed: list[Any] = []
    for kind, (name, kind_of_schedule, volumes) in {
        "client_admin": ("nightly", "cron", 2),
        "other_client_admin": ("every-6h", "interval", 1),
    }.items():
        schedules = demo.sdk(kind).cloud.snapshot_schedules
        plain = await schedules.list()
        full = await schedules.list(extra_query={"need_volumes": "true"})
        assert [p.name for p in plain.results] == [name] and plain.results[0].volumes == []
        assert [len(p.volumes) for p in full.results] == [volumes]
        policy = plain.results[0]
        got = await schedules.get(policy.id)
        got_full = await schedules.get(policy.id, extra_query={"need_volumes": "true"})
        assert [s.type for s in got.schedules] == [kind_of_schedule] and got.volumes == []
        assert len(got_full.volumes) == volumes
        parsed += [*plain.results, *full.results, got, got_full]
    return parsed


@covers(
    "cloud.audit_logs.list",
    raw=(("PATCH", V1_LISTENER),),  # the v1 rename, parsed by the SDK's listener model
)
async def user_actions(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    lid = await listener_named(demo, "web-https")
    renamed = await sdk.patch(
        f"/cloud/v1/lblisteners/{PROJECT}/{REGION}/{lid}",
        body={"name": "web-tls"},
        cast_to=LoadBalancerListenerDetail,
    )
    assert renamed.name == "web-tls"
    newest = [x async for x in sdk.cloud.audit_logs.list(limit=2)]
    oldest = [x async for x in sdk.cloud.audit_logs.list(limit=3, order_by="asc")]
    assert [x.id for x in oldest] == [x.id for x in reversed(newest)] and newest
    only = await sdk.cloud.audit_logs.list(api_group=["lblistener"], project_id=[PROJECT])
    assert "web-tls" in [r.search_field for x in only.results for r in x.resources]
    for kind in ("operator", "reseller", "other_client_admin", "engineer"):
        parsed = [x async for x in demo.sdk(kind).cloud.audit_logs.list(limit=50)]
        only.results.extend(parsed)
    back = await sdk.patch(
        f"/cloud/v1/lblisteners/{PROJECT}/{REGION}/{lid}",
        body={"name": "web-https"},
        cast_to=LoadBalancerListenerDetail,
    )
    return [renamed, *newest, *oldest, *only.results, back]
