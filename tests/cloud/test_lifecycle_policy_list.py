"""GET /cloud/v1/lifecycle_policy/{project_id}/{region_id}: the list beside operation 15."""

from __future__ import annotations

import httpx
import pytest
from gcore.types.cloud.snapshot_schedule_list_response import SnapshotScheduleListResponse
from sqlalchemy.ext.asyncio import AsyncSession

from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_policy
from tests.cloud.test_lifecycle_policies import CRON, INTERVAL, POLICY_FIELDS, VOLUMES
from tests.factories import auth


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def list_url(cl: CloudLandscape, project: int | None = None, region: int | None = None) -> str:
    return f"/cloud/v1/lifecycle_policy/{project or cl.project}/{region or cl.region}"


async def three_policies(session: AsyncSession, cl: CloudLandscape) -> list[int]:
    """Two policies of the project in the region, and others that must not be listed."""
    first = await make_policy(
        session, cl.project, cl.region, name="nightly", schedules=[CRON], volumes=VOLUMES
    )
    second = await make_policy(
        session, cl.project, cl.region, name="hourly", schedules=[INTERVAL], status="paused"
    )
    await make_policy(session, cl.project, cl.other_region, name="elsewhere")
    await make_policy(session, cl.foreign_project, cl.region, name="foreign")
    return [first, second]


class TestListPolicies:
    @pytest.mark.parametrize("who", ["client_member", "client_admin", "operator"])
    async def test_lists_the_project_region_policies_by_id(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        ids = await three_policies(session, cl)
        r = await client.get(list_url(cl), headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == {"count", "results"}
        assert got["count"] == 2
        assert [p["id"] for p in got["results"]] == ids
        assert all(set(p) == POLICY_FIELDS for p in got["results"])
        assert [p["schedules"][0]["type"] for p in got["results"]] == ["cron", "interval"]
        assert [p["status"] for p in got["results"]] == ["active", "paused"]

    async def test_each_policy_reads_as_its_get(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        ids = await three_policies(session, cl)
        listed = (
            await client.get(
                list_url(cl), params={"need_volumes": "true"}, headers=auth(cl.ls.client_member)
            )
        ).json()["results"]
        for pid, item in zip(ids, listed, strict=True):
            one = await client.get(
                f"{list_url(cl)}/{pid}",
                params={"need_volumes": "true"},
                headers=auth(cl.ls.client_member),
            )
            assert item == one.json()

    async def test_need_volumes_lists_the_volumes(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await three_policies(session, cl)
        r = await client.get(
            list_url(cl), params={"need_volumes": "true"}, headers=auth(cl.ls.client_member)
        )
        got = r.json()
        assert [p["volumes"] for p in got["results"]] == [VOLUMES, []]
        SnapshotScheduleListResponse.model_validate(got)

    async def test_limit_and_offset(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        ids = await three_policies(session, cl)
        r = await client.get(
            list_url(cl), params={"limit": 1, "offset": 1}, headers=auth(cl.ls.client_member)
        )
        got = r.json()
        assert got["count"] == 2
        assert [p["id"] for p in got["results"]] == ids[1:]

    async def test_empty_region(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(list_url(cl), headers=auth(cl.ls.client_member))
        assert r.status_code == 200
        assert r.json() == {"count": 0, "results": []}

    async def test_reseller_lists_its_own_project(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.reseller_project, cl.region)
        r = await client.get(
            list_url(cl, project=cl.reseller_project), headers=auth(cl.ls.reseller)
        )
        assert r.status_code == 200
        assert [p["id"] for p in r.json()["results"]] == [pid]


class TestListPoliciesAcrossTenants:
    @pytest.mark.parametrize("who", ["reseller", "other_reseller"])
    async def test_resellers_do_not_reach_a_clients_project(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        await three_policies(session, cl)
        assert (await client.get(list_url(cl), headers=auth(cl.ls.client_member))).is_success
        r = await client.get(list_url(cl), headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 404
        assert r.json()["exception_class"] == "NotFoundError"

    async def test_another_accounts_project_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await three_policies(session, cl)
        assert (await client.get(list_url(cl), headers=auth(cl.ls.client_admin))).is_success
        r = await client.get(list_url(cl), headers=auth(cl.foreign_admin))
        assert r.status_code == 404
        r = await client.get(
            list_url(cl, project=cl.foreign_project), headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 404

    async def test_unknown_project_is_404(self, client: httpx.AsyncClient, cl: CloudLandscape):
        assert (await client.get(list_url(cl), headers=auth(cl.ls.operator))).is_success
        r = await client.get(list_url(cl, project=999_999), headers=auth(cl.ls.operator))
        assert r.status_code == 404

    async def test_without_key_is_401(self, client: httpx.AsyncClient, cl: CloudLandscape):
        assert (await client.get(list_url(cl))).status_code == 401


class TestListPoliciesValidation:
    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"need_volumes": "maybe"}, "need_volumes"),
            ({"limit": 0}, "limit"),
            ({"limit": 1001}, "limit"),
            ({"offset": -1}, "offset"),
        ],
    )
    async def test_bad_query_is_400_naming_it(
        self,
        client: httpx.AsyncClient,
        cl: CloudLandscape,
        params: dict,
        field: str,  # type: ignore[type-arg]
    ):
        r = await client.get(list_url(cl), params=params, headers=auth(cl.ls.client_member))
        assert r.status_code == 400
        body = r.json()
        assert body["exception_class"] == "ValidationError"
        assert list(body["invalid_fields"]) == [field]

    @pytest.mark.parametrize(
        ("path", "field"),
        [
            ("/cloud/v1/lifecycle_policy/0/1", "project_id"),
            ("/cloud/v1/lifecycle_policy/x/1", "project_id"),
            ("/cloud/v1/lifecycle_policy/1/2147483648", "region_id"),
        ],
    )
    async def test_bad_path_is_400_naming_it(
        self, client: httpx.AsyncClient, cl: CloudLandscape, path: str, field: str
    ):
        r = await client.get(path, headers=auth(cl.ls.client_member))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [field]

    async def test_in_the_openapi(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        op = spec["paths"]["/cloud/v1/lifecycle_policy/{project_id}/{region_id}"]["get"]
        assert {p["name"] for p in op["parameters"]} == {
            "project_id",
            "region_id",
            "need_volumes",
            "limit",
            "offset",
        }
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/LifecyclePolicyList")
