"""Snapshot lifecycle policy read (operation 15)."""

from __future__ import annotations

import httpx
import pytest
from gcore.types.cloud.lifecycle_policy import LifecyclePolicy as SdkPolicy
from sqlalchemy.ext.asyncio import AsyncSession

from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_policy
from tests.factories import auth

CRON = {
    "type": "cron", "id": "sch-cron-1", "max_quantity": 7, "owner": "lifecycle_policy",
    "owner_id": 1, "user_id": 77, "retention_time": {"days": 7, "hours": 0, "minutes": 0,
                                                     "weeks": 1},
    "resource_name_template": "snap-{volume_id}", "minute": "0,30", "hour": "2", "day": "*",
    "month": "*", "week": "*", "day_of_week": "mon,fri", "timezone": "Europe/Luxembourg",
}  # fmt: skip
INTERVAL = {
    "type": "interval", "id": "sch-int-1", "max_quantity": 3, "owner": "lifecycle_policy",
    "owner_id": 1, "user_id": 77, "weeks": 0, "days": 1, "hours": 12, "minutes": 30,
}  # fmt: skip
POLICY_FIELDS = {
    "action",
    "id",
    "name",
    "project_id",
    "region_id",
    "schedules",
    "status",
    "user_id",
    "volumes",
}
COMMON = {
    "id",
    "max_quantity",
    "owner",
    "owner_id",
    "retention_time",
    "type",
    "user_id",
    "resource_name_template",
}
VOLUMES = [{"volume_id": "726ecfcc-7fd0-4e30-a86e-7892524aa483", "volume_name": "data"}]


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def url(cl: CloudLandscape, pid: int, project: int | None = None, region: int | None = None):
    return f"/cloud/v1/lifecycle_policy/{project or cl.project}/{region or cl.region}/{pid}"


class TestGetPolicy:
    async def test_both_schedule_variants_without_volumes(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(
            session, cl.project, cl.region, schedules=[CRON, INTERVAL], volumes=VOLUMES
        )
        r = await client.get(url(cl, pid), headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == POLICY_FIELDS
        assert got["volumes"] == []  # the provider types it as an array, always present
        assert got["action"] == "volume_snapshot"
        assert got["project_id"] == cl.project and got["region_id"] == cl.region
        assert got["status"] == "active" and got["user_id"] == 77 and got["name"] == "nightly"
        cron, interval = got["schedules"]
        assert set(cron) == COMMON | {
            "minute",
            "hour",
            "day",
            "month",
            "week",
            "day_of_week",
            "timezone",
        }
        assert cron == CRON
        assert set(interval) == COMMON | {"weeks", "days", "hours", "minutes"}
        assert interval == {**INTERVAL, "retention_time": None, "resource_name_template": None}
        assert all(isinstance(interval[k], int) for k in ("weeks", "days", "hours", "minutes"))
        assert all(
            isinstance(cron[k], str)
            for k in ("minute", "hour", "day", "month", "week", "day_of_week", "timezone")
        )
        SdkPolicy.model_validate(got)  # the official client's view

    async def test_need_volumes_true_lists_volumes(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.region, schedules=[CRON], volumes=VOLUMES)
        r = await client.get(
            url(cl, pid), params={"need_volumes": "true"}, headers=auth(cl.ls.client_member)
        )
        got = r.json()
        assert got["volumes"] == VOLUMES
        policy = SdkPolicy.model_validate(got)  # the official client's view
        assert policy.schedules[0].type == "cron"

    async def test_need_volumes_false_is_empty(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.region, volumes=VOLUMES)
        r = await client.get(
            url(cl, pid), params={"need_volumes": "false"}, headers=auth(cl.ls.client_member)
        )
        assert r.json()["volumes"] == []

    async def test_empty_volumes_on_request(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.region, status="paused")
        r = await client.get(
            url(cl, pid), params={"need_volumes": "true"}, headers=auth(cl.ls.client_member)
        )
        assert r.json()["volumes"] == [] and r.json()["status"] == "paused"

    async def test_cron_fields_absent_in_storage_read_as_defaults(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sparse = {
            "type": "cron",
            "id": "s",
            "max_quantity": 1,
            "owner": "lifecycle_policy",
            "owner_id": 1,
            "user_id": 77,
            "hour": "3",
        }
        pid = await make_policy(session, cl.project, cl.region, schedules=[sparse])
        got = (await client.get(url(cl, pid), headers=auth(cl.ls.client_member))).json()
        s = got["schedules"][0]
        assert s["hour"] == "3" and s["minute"] == "*" and s["timezone"] == "UTC"

    async def test_operator_reads(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.region)
        r = await client.get(url(cl, pid), headers=auth(cl.ls.operator))
        assert r.status_code == 200

    @pytest.mark.parametrize("who", ["reseller", "other_reseller", "foreign_admin"])
    async def test_other_tenants_get_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        pid = await make_policy(session, cl.project, cl.region)
        key = getattr(cl, who, None) or getattr(cl.ls, who)
        r = await client.get(url(cl, pid), headers=auth(key))
        assert r.status_code == 404
        assert r.json()["exception_class"] == "NotFoundError"

    async def test_policy_in_another_region_or_project_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.other_region)
        foreign = await make_policy(session, cl.foreign_project, cl.region)
        r = await client.get(url(cl, pid), headers=auth(cl.ls.client_admin))
        assert r.status_code == 404
        r = await client.get(url(cl, foreign), headers=auth(cl.ls.client_admin))
        assert r.status_code == 404

    async def test_unknown_policy_is_404(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.get(url(cl, 999999), headers=auth(cl.ls.client_admin))
        assert r.status_code == 404

    @pytest.mark.parametrize("bad", ["abc", "0", "-3"])
    async def test_bad_policy_id_is_400(
        self, client: httpx.AsyncClient, cl: CloudLandscape, bad: str
    ):
        r = await client.get(
            f"/cloud/v1/lifecycle_policy/{cl.project}/{cl.region}/{bad}",
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["policy_id"]

    async def test_bad_need_volumes_is_400(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        pid = await make_policy(session, cl.project, cl.region)
        r = await client.get(
            url(cl, pid), params={"need_volumes": "perhaps"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["need_volumes"]
