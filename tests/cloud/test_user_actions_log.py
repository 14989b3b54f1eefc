"""GET /cloud/v1/user_actions: the user-action log (the records the events carry)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from gcore.types.cloud.audit_log_entry import AuditLogEntry
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import Client, UserActionEvent
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.kit.timeparse import isoformat_z
from tests.cloud.helpers import CloudLandscape, cloud_landscape, make_listener
from tests.factories import auth

LOG = "/cloud/v1/user_actions"
# Every field of the real API's UserActionSerializer (all required), and our request_id.
RECORD_FIELDS = {
    "id", "timestamp", "client_id", "user_id", "email", "project_id", "region_id",
    "api_group", "action_type", "action_data", "task_id", "user_agent", "source_user_ip",
    "acknowledged", "is_complete", "total_price", "token_id", "issued_by_user_id",
    "resources", "request_id",
}  # fmt: skip


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def key_id(token: str) -> int:
    return int(token.split("_", 1)[0])


async def act(
    session: AsyncSession,
    account: Client,
    *,
    user_id: int = 1,
    action_type: str = "update",
    api_group: str = "lblistener",
    resources: list[Resource] | None = None,
    project_id: int | None = None,
    region_id: int | None = None,
    ip: str = "198.51.100.1",
    agent: str = "test/1",
    when: datetime | None = None,
) -> str:
    """Records one action on ``account`` (as the services do) and returns its id."""
    caller = Caller(
        user_id=user_id,
        user_email=f"u{user_id}@example.com",
        superuser=False,
        group_ids=frozenset({1}),
        key_id=7,
        account_id=account.id,
        account_type=account.client_type,
        account_reseller_id=account.reseller_id,
    )
    event = await user_actions.record(
        session,
        Actor(caller, ip, agent, "req"),
        action_type=action_type,
        api_group=api_group,
        resources=resources or [Resource("lblistener", "l-1", "web")],
        client_id=account.id,
        reseller_id=account.reseller_id,
        action_data={"name": "x"},
        project_id=project_id,
        region_id=region_id,
    )
    await session.flush()
    if when is not None:  # the record's timestamp and the column move together
        await session.execute(
            update(UserActionEvent)
            .where(UserActionEvent.id == event.id)
            .values(created_at=when, body={**event.body, "timestamp": isoformat_z(when)})
        )
    await session.commit()
    return event.event_id


async def ids(client: httpx.AsyncClient, token: str, **params: Any) -> list[str]:
    r = await client.get(LOG, params=params, headers=auth(token))
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["count"] >= len(got["results"])
    return [x["id"] for x in got["results"]]


class TestRecord:
    async def test_a_rename_reads_as_the_providers_record(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        lid = await make_listener(session, cl.project, cl.region)
        r = await client.patch(
            f"/cloud/v1/lblisteners/{cl.project}/{cl.region}/{lid}",
            json={"name": "renamed"},
            headers={**auth(cl.ls.client_admin), "User-Agent": "ua/2", "X-Request-ID": "req-77"},
        )
        assert r.status_code == 200
        r = await client.get(LOG, headers=auth(cl.ls.client_admin))
        assert r.status_code == 200, r.text
        page = r.json()
        assert page["count"] == 1 and set(page) == {"count", "results"}
        [rec] = page["results"]
        assert set(rec) == RECORD_FIELDS
        assert rec["api_group"] == "lblistener" and rec["action_type"] == "update"
        assert rec["client_id"] == cl.ls.client_account.id
        assert rec["user_id"] == cl.ls.admin_user.id == rec["issued_by_user_id"]
        assert rec["email"] == cl.ls.admin_user.email
        assert rec["token_id"] == key_id(cl.ls.client_admin)
        assert (rec["project_id"], rec["region_id"]) == (cl.project, cl.region)
        assert rec["resources"] == [
            {"resource_id": lid, "resource_type": "lblistener", "search_field": "renamed"}
        ]
        assert rec["action_data"] == {"name": "renamed"}
        assert (rec["user_agent"], rec["source_user_ip"]) == ("ua/2", "203.0.113.7")
        assert rec["request_id"] == "req-77" and rec["timestamp"].endswith("Z")
        # Nothing was subscribed, no task ran, nothing is priced; the record is whole.
        assert rec["acknowledged"] is False and rec["is_complete"] is True
        assert rec["task_id"] is None and rec["total_price"] is None
        AuditLogEntry.model_validate(rec)

    async def test_a_resource_without_search_field_leaves_it_out(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await act(session, cl.ls.client_account, resources=[Resource("lblistener", "l-9")])
        [rec] = (await client.get(LOG, headers=auth(cl.ls.client_admin))).json()["results"]
        assert rec["resources"] == [{"resource_id": "l-9", "resource_type": "lblistener"}]

    async def test_in_the_openapi_with_the_providers_parameters(self, client: httpx.AsyncClient):
        spec = (await client.get("/openapi.json")).json()
        op = spec["paths"][LOG]["get"]
        assert {p["name"] for p in op["parameters"]} == {
            "action_type",
            "api_group",
            "from_timestamp",
            "to_timestamp",
            "limit",
            "offset",
            "order_by",
            "sorting",
            "project_id",
            "region_id",
            "resource_id",
            "search_field",
            "source_user_ips",
            "user_agents",
        }
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/UserActionList")
        record = spec["components"]["schemas"]["UserAction"]
        assert set(record["required"]) == RECORD_FIELDS


class TestWhoSeesWhat:
    """Client account A (the reseller's), its sibling B, the reseller R, another reseller O."""

    @pytest.fixture
    async def acts(self, session: AsyncSession, cl: CloudLandscape) -> dict[str, str]:
        return {
            "a": await act(session, cl.ls.client_account),
            "b": await act(session, cl.foreign_account),
            "r": await act(session, cl.ls.reseller_account, api_group="seller"),
            "o": await act(session, cl.ls.other_reseller_account, api_group="seller"),
        }

    async def test_operator_sees_every_account(
        self, client: httpx.AsyncClient, cl: CloudLandscape, acts: dict[str, str]
    ):
        assert set(await ids(client, cl.ls.operator)) == set(acts.values())

    async def test_reseller_sees_its_own_and_its_clients(
        self, client: httpx.AsyncClient, cl: CloudLandscape, acts: dict[str, str]
    ):
        assert set(await ids(client, cl.ls.reseller)) == {acts["a"], acts["b"], acts["r"]}
        assert await ids(client, cl.ls.other_reseller) == [acts["o"]]

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_users_of_an_account_see_its_actions_only(
        self, client: httpx.AsyncClient, cl: CloudLandscape, acts: dict[str, str], who: str
    ):
        assert await ids(client, getattr(cl.ls, who)) == [acts["a"]]
        assert await ids(client, cl.foreign_admin) == [acts["b"]]

    async def test_another_accounts_project_shows_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await act(session, cl.foreign_account, project_id=cl.foreign_project)
        r = await client.get(
            LOG, params={"project_id": cl.foreign_project}, headers=auth(cl.ls.client_admin)
        )
        assert r.json() == {"count": 0, "results": []}

    async def test_without_key_is_401(self, client: httpx.AsyncClient):
        r = await client.get(LOG)
        assert r.status_code == 401


class TestFilters:
    @pytest.fixture
    async def three(self, session: AsyncSession, cl: CloudLandscape) -> list[str]:
        account = cl.ls.client_account
        return [
            await act(
                session,
                account,
                action_type="create",
                project_id=cl.project,
                region_id=cl.region,
                ip="198.51.100.1",
                agent="cli/1",
                resources=[Resource("lblistener", "l-1", "Web-Front")],
                when=datetime(2026, 1, 1, tzinfo=UTC),
            ),
            await act(
                session,
                account,
                action_type="update",
                api_group="client",
                resources=[Resource("client", account.id)],
                ip="198.51.100.2",
                agent="ui/2",
                when=datetime(2026, 1, 2, tzinfo=UTC),
            ),
            await act(
                session,
                account,
                action_type="delete",
                project_id=cl.project,
                region_id=cl.other_region,
                ip="198.51.100.3",
                agent="cli/1",
                resources=[Resource("lblistener", "l-3", "db-back")],
                when=datetime(2026, 1, 3, tzinfo=UTC),
            ),
        ]

    async def test_newest_first_by_default(
        self, client: httpx.AsyncClient, cl: CloudLandscape, three: list[str]
    ):
        assert await ids(client, cl.ls.client_admin) == three[::-1]

    async def test_order_by_and_the_deprecated_sorting(
        self, client: httpx.AsyncClient, cl: CloudLandscape, three: list[str]
    ):
        assert await ids(client, cl.ls.client_admin, order_by="asc") == three
        assert await ids(client, cl.ls.client_admin, sorting="asc") == three
        assert await ids(client, cl.ls.client_admin, order_by="desc", sorting="asc") == three[::-1]

    async def test_limit_offset_and_count(
        self, client: httpx.AsyncClient, cl: CloudLandscape, three: list[str]
    ):
        r = await client.get(
            LOG,
            params={"order_by": "asc", "limit": 1, "offset": 1},
            headers=auth(cl.ls.client_admin),
        )
        got = r.json()
        assert got["count"] == 3 and [x["id"] for x in got["results"]] == [three[1]]

    @pytest.mark.parametrize(
        ("params", "expected"),
        [
            ({"action_type": ["create", "delete"]}, [0, 2]),
            ({"api_group": "client"}, [1]),
            ({"resource_id": ["l-3", "nope"]}, [2]),
            ({"search_field": "web-"}, [0]),
            ({"search_field": "%"}, []),
            ({"source_user_ips": ["198.51.100.2", "198.51.100.3"]}, [1, 2]),
            ({"user_agents": "cli/1"}, [0, 2]),
            ({"from_timestamp": "2026-01-02T00:00:00Z"}, [1, 2]),
            ({"to_timestamp": "2026-01-02T00:00:00Z"}, [0, 1]),
            (
                {
                    "from_timestamp": "2026-01-01T12:00:00+00:00",
                    "to_timestamp": "2026-01-02 12:00:00",
                },
                [1],
            ),
            ({"action_type": "create", "api_group": "client"}, []),
        ],
    )
    async def test_filter(
        self,
        client: httpx.AsyncClient,
        cl: CloudLandscape,
        three: list[str],
        params: dict[str, Any],
        expected: list[int],
    ):
        got = await ids(client, cl.ls.client_admin, order_by="asc", **params)
        assert got == [three[i] for i in expected]

    async def test_project_and_region_filters(
        self, client: httpx.AsyncClient, cl: CloudLandscape, three: list[str]
    ):
        assert await ids(client, cl.ls.client_admin, order_by="asc", project_id=cl.project) == [
            three[0],
            three[2],
        ]
        assert await ids(
            client, cl.ls.client_admin, order_by="asc", region_id=[cl.region, cl.other_region]
        ) == [three[0], three[2]]
        assert await ids(client, cl.ls.client_admin, region_id=cl.other_region) == [three[2]]


class TestValidation:
    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"action_type": "explode"}, "action_type.0"),
            ({"api_group": "nonsense"}, "api_group.0"),
            ({"from_timestamp": "yesterday"}, "from_timestamp"),
            ({"to_timestamp": "2026-13-01T00:00:00Z"}, "to_timestamp"),
            ({"limit": 0}, "limit"),
            ({"limit": 1001}, "limit"),
            ({"offset": -1}, "offset"),
            ({"order_by": "up"}, "order_by"),
            ({"sorting": "up"}, "sorting"),
            ({"project_id": "x"}, "project_id.0"),
            ({"region_id": 2**31}, "region_id.0"),
            ({"search_field": "s" * 256}, "search_field"),
            ({"resource_id": "r" * 256}, "resource_id.0"),
        ],
    )
    async def test_bad_query_is_400_naming_it(
        self, client: httpx.AsyncClient, cl: CloudLandscape, params: dict[str, Any], field: str
    ):
        r = await client.get(LOG, params=params, headers=auth(cl.ls.client_member))
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["exception_class"] == "ValidationError"
        assert list(body["invalid_fields"]) == [field]

    async def test_text_the_database_cannot_store_is_400_under_invalid_fields(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.get(f"{LOG}?search_field=a%00b", headers=auth(cl.ls.client_member))
        assert r.status_code == 400, r.text
        assert list(r.json()["invalid_fields"]) == ["search_field"]
