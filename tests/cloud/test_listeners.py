"""Load balancer listeners: list, read, rename (operation 14)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from gcore.types.cloud.load_balancer_listener_detail import LoadBalancerListenerDetail
from gcore.types.cloud.load_balancer_listener_list import LoadBalancerListenerList
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Listener
from cloudadmin.web.app_state import app_state
from tests.cloud.helpers import CloudLandscape, cloud_landscape, events, make_listener
from tests.factories import auth
from tests.races import LockWaits

LISTENER_FIELDS = {
    "allowed_cidrs",
    "admin_state_up",
    "connection_limit",
    "creator_task_id",
    "id",
    "insert_headers",
    "load_balancer_id",
    "name",
    "operating_status",
    "pool_count",
    "protocol",
    "protocol_port",
    "provisioning_status",
    "secret_id",
    "sni_secret_id",
    "stats",
    "task_id",
    "timeout_client_data",
    "timeout_member_connect",
    "timeout_member_data",
    "user_list",
}


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def url(cl: CloudLandscape, lid: str, project: int | None = None, region: int | None = None):
    return f"/cloud/v1/lblisteners/{project or cl.project}/{region or cl.region}/{lid}"


async def stored_name(session: AsyncSession, lid: str) -> str:
    row = (
        await session.execute(
            select(Listener).where(Listener.id == lid).execution_options(populate_existing=True)
        )
    ).scalar_one()
    await session.commit()  # end the read: on SQLite it holds the database lock
    return row.name


class TestRenameListener:
    async def test_admin_renames_and_gets_the_full_listener(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "web.front-1"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == LISTENER_FIELDS
        assert got["name"] == "web.front-1"
        assert got["id"] == lid
        assert got["stats"] is None
        assert got["task_id"] is None
        assert got["user_list"] == [{"encrypted_password": "$6$abc", "username": "admin"}]
        assert got["insert_headers"] == {"X-Forwarded-For": "true"}
        assert got["timeout_member_data"] is None
        LoadBalancerListenerDetail.model_validate(got)  # the official client's view
        assert await stored_name(session, lid) == "web.front-1"

    async def test_records_one_user_action(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        await client.patch(url(cl, lid), json={"name": "renamed"}, headers=auth(cl.ls.client_admin))
        evs = await events(session)
        assert len(evs) == 1
        ev = evs[0]
        assert ev["api_group"] == "lblistener" and ev["action_type"] == "update"
        assert ev["resources"] == [
            {"resource_id": lid, "resource_type": "lblistener", "search_field": "renamed"}
        ]
        assert ev["project_id"] == cl.project and ev["region_id"] == cl.region
        assert ev["client_id"] == cl.ls.client_account.id
        assert ev["action_data"] == {"name": "renamed"}

    async def test_engineer_may_rename(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "by-engineer"}, headers=auth(cl.engineer)
        )
        assert r.status_code == 200, r.text

    async def test_operator_may_rename(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "by-operator"}, headers=auth(cl.ls.operator)
        )
        assert r.status_code == 200, r.text

    async def test_member_is_forbidden_and_nothing_changes(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "nope-nope"}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"
        assert await stored_name(session, lid) == "http-80"
        assert await events(session) == []

    @pytest.mark.parametrize("who", ["reseller", "other_reseller"])
    async def test_other_accounts_get_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "stolen"}, headers=auth(getattr(cl.ls, who))
        )
        assert r.status_code == 404
        assert r.json()["exception_class"] == "NotFoundError"

    async def test_admin_of_another_client_gets_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "stolen"}, headers=auth(cl.foreign_admin)
        )
        assert r.status_code == 404

    async def test_listener_in_another_region_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.other_region)
        r = await client.patch(
            url(cl, lid), json={"name": "renamed"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 404

    async def test_listener_in_another_project_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.foreign_project, cl.region)
        r = await client.patch(
            url(cl, lid), json={"name": "renamed"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 404
        # ...even when named under the caller's own project id
        r = await client.patch(
            url(cl, lid, project=cl.foreign_project),
            json={"name": "x-y-z"},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 404

    async def test_unknown_listener_is_404(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.patch(
            url(cl, str(uuid.uuid4())), json={"name": "renamed"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 404

    async def test_listener_id_not_a_uuid_is_400(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.patch(
            url(cl, "not-a-uuid"), json={"name": "renamed"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["listener_id"]

    async def test_locked_listener_is_409_naming_the_task(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        task = str(uuid.uuid4())
        lid = await make_listener(session, cl.project, cl.region, task_id=task)
        r = await client.patch(
            url(cl, lid), json={"name": "renamed"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 409
        body = r.json()
        assert body["exception_class"] == "ConflictError"
        assert task in body["message"]
        assert await stored_name(session, lid) == "http-80"
        assert await events(session) == []

    @pytest.mark.parametrize(
        "name",
        [
            "ab",
            "a" * 64,
            "-leading-dash",
            " leading-space",
            "trailing-dash-",
            "trailing space ",
            "bad/char",
            "ünïcode",
            "",
            "a\nb",
        ],
    )
    async def test_invalid_name_is_400(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, name: str
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(url(cl, lid), json={"name": name}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["exception_class"] == "ValidationError"
        assert list(body["invalid_fields"]) == ["name"]

    @pytest.mark.parametrize("name", ["abc", "a" * 63, "A b.c_d-e.", "0_0", "x.y."])
    async def test_valid_name_bounds(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, name: str
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(url(cl, lid), json={"name": name}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 200, r.text
        assert r.json()["name"] == name

    async def test_name_is_required(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(url(cl, lid), json={}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 400
        assert "name" in r.json()["invalid_fields"]

    async def test_without_key_is_401(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.patch(url(cl, str(uuid.uuid4())), json={"name": "renamed"})
        assert r.status_code == 401


class TestConcurrentRenames:
    async def test_concurrent_renames_all_apply_and_the_last_wins(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        names = [f"name-{i:02d}" for i in range(8)]
        results = await asyncio.gather(
            *[
                client.patch(url(cl, lid), json={"name": n}, headers=auth(cl.ls.client_admin))
                for n in names
            ]
        )
        assert [r.status_code for r in results] == [200] * len(names)
        assert [r.json()["name"] for r in results] == names
        assert await stored_name(session, lid) in names
        assert len(await events(session, "lblistener")) == len(names)

    async def test_a_lock_taken_while_a_rename_waits_is_respected(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, app
    ):
        """A task locks the listener in an open transaction; a rename that arrives
        meanwhile must see the lock once it may write (409), never overwrite the name."""
        lid = await make_listener(session, cl.project, cl.region)
        task = str(uuid.uuid4())
        async with app_state(app).sessionmaker() as locker:
            await locker.execute(
                update(Listener).where(Listener.id == lid).values(task_id=task, name="by-task")
            )
            with LockWaits(app) as waits:
                pending = asyncio.create_task(
                    client.patch(
                        url(cl, lid), json={"name": "by-request"}, headers=auth(cl.ls.client_admin)
                    )
                )
                await waits.reach(1)  # the request waits for the row (SQLite: the database)
            assert not pending.done()
            await locker.commit()
        r = await pending
        assert r.status_code == 409, r.text
        assert task in r.json()["message"]
        assert await stored_name(session, lid) == "by-task"

    async def test_renames_racing_a_lock_either_precede_it_or_are_refused(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, app
    ):
        lid = await make_listener(session, cl.project, cl.region)
        task = str(uuid.uuid4())

        async def lock() -> None:
            async with app_state(app).sessionmaker() as s:
                await s.execute(
                    update(Listener)
                    .where(Listener.id == lid)
                    .values(task_id=task, name="locked-name")
                )
                await s.commit()

        renames = [
            client.patch(url(cl, lid), json={"name": f"race-{i}"}, headers=auth(cl.ls.client_admin))
            for i in range(6)
        ]
        *results, _ = await asyncio.gather(*renames, lock())
        assert {r.status_code for r in results} <= {200, 409}
        # Every rename that succeeded happened before the lock: the lock's name survives.
        assert await stored_name(session, lid) == "locked-name"
        ok = sum(r.status_code == 200 for r in results)
        assert len(await events(session, "lblistener")) == ok


class TestGetListener:
    async def test_reads_without_stats(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.get(url(cl, lid), headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == LISTENER_FIELDS
        assert got["stats"] is None
        assert got["protocol"] == "HTTP" and got["protocol_port"] == 80
        LoadBalancerListenerDetail.model_validate(got)

    async def test_show_stats_fills_stats(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.get(
            url(cl, lid), params={"show_stats": "true"}, headers=auth(cl.ls.client_member)
        )
        assert r.json()["stats"] == {
            "active_connections": 3,
            "bytes_in": 1024,
            "bytes_out": 2048,
            "request_errors": 1,
            "total_connections": 42,
        }
        LoadBalancerListenerDetail.model_validate(r.json())

    async def test_other_tenant_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.get(url(cl, lid), headers=auth(cl.foreign_admin))
        assert r.status_code == 404

    async def test_bad_show_stats_is_400(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.get(
            url(cl, lid), params={"show_stats": "maybe"}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["show_stats"]


class TestListListeners:
    def list_url(self, cl: CloudLandscape, region: int | None = None) -> str:
        return f"/cloud/v1/lblisteners/{cl.project}/{region or cl.region}"

    async def test_lists_the_project_region_listeners(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        a = await make_listener(session, cl.project, cl.region, name="aaa")
        b = await make_listener(session, cl.project, cl.region, name="bbb")
        await make_listener(session, cl.project, cl.other_region, name="elsewhere")
        await make_listener(session, cl.foreign_project, cl.region, name="foreign")
        r = await client.get(self.list_url(cl), headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == {"count", "results"}
        assert got["count"] == 2
        assert [x["id"] for x in got["results"]] == [a, b]
        assert all(x["stats"] is None for x in got["results"])
        LoadBalancerListenerList.model_validate(got)

    async def test_show_stats_limit_and_offset(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        for n in ("aaa", "bbb", "ccc"):
            await make_listener(session, cl.project, cl.region, name=n)
        r = await client.get(
            self.list_url(cl),
            params={"limit": 1, "offset": 1, "show_stats": "true"},
            headers=auth(cl.ls.client_member),
        )
        got = r.json()
        assert got["count"] == 3
        assert [x["name"] for x in got["results"]] == ["bbb"]
        assert got["results"][0]["stats"]["total_connections"] == 42

    async def test_load_balancer_filter(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lb = str(uuid.uuid4())
        mine = await make_listener(session, cl.project, cl.region, load_balancer_id=lb)
        await make_listener(session, cl.project, cl.region)
        r = await client.get(
            self.list_url(cl), params={"load_balancer_id": lb}, headers=auth(cl.ls.client_member)
        )
        assert [x["id"] for x in r.json()["results"]] == [mine]

    async def test_name_filter_is_the_exact_name(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = await make_listener(session, cl.project, cl.region, name="web-http")
        await make_listener(session, cl.project, cl.region, name="web-https")
        await make_listener(session, cl.project, cl.region, name="WEB-HTTP")
        r = await client.get(
            self.list_url(cl), params={"name": "web-http"}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 200, r.text
        assert (r.json()["count"], [x["id"] for x in r.json()["results"]]) == (1, [mine])

    @pytest.mark.parametrize(
        ("param", "value"), [("limit", 0), ("limit", 1001), ("offset", -1), ("limit", "x")]
    )
    async def test_bounds(
        self, client: httpx.AsyncClient, cl: CloudLandscape, param: str, value: object
    ):
        r = await client.get(
            self.list_url(cl), params={param: value}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [param]

    async def test_limit_1000_is_allowed(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(
            self.list_url(cl), params={"limit": 1000}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 200
        assert r.json() == {"count": 0, "results": []}

    async def test_other_account_project_is_404(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.get(
            f"/cloud/v1/lblisteners/{cl.foreign_project}/{cl.region}",
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 404

    async def test_reseller_reads_its_own_project(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_listener(session, cl.reseller_project, cl.region)
        r = await client.get(
            f"/cloud/v1/lblisteners/{cl.reseller_project}/{cl.region}", headers=auth(cl.ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["count"] == 1
