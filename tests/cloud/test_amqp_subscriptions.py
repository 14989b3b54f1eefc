"""AMQP subscriptions: subscribe, unsubscribe, read, list, update (operation 18)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import AmqpSubscription
from cloudadmin.kit.crypto import SecretBox
from tests.cloud.helpers import (
    BOX,
    SECRET_KEY,
    CloudLandscape,
    cloud_landscape,
    events,
)
from tests.events.helpers import make_subscription
from tests.factories import auth

BASE = "/cloud/v1/user_actions"
CONN = "amqps://events:s3cret@broker.example:5671/prod"
MASKED = "amqps://events:***@broker.example:5671/prod"
FIELDS = {"connection_string", "exchange", "id", "receive_child_client_events", "routing_key"}


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def one(sid: int) -> str:
    return f"{BASE}/amqp_subscriptions/{sid}"


async def stored(session: AsyncSession, client_id: int) -> AmqpSubscription | None:
    row = (
        await session.execute(
            select(AmqpSubscription)
            .where(AmqpSubscription.client_id == client_id)
            .execution_options(populate_existing=True)
        )
    ).scalar_one_or_none()
    await session.commit()  # end the read: on SQLite it holds the database lock
    return row


def plain(row: AmqpSubscription) -> str:
    return SecretBox(SECRET_KEY).decrypt(row.connection_string_encrypted)


class TestUpdateSubscription:
    async def test_partial_update_answers_masked(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(
            one(sid), json={"routing_key": "audit"}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert got == {
            "connection_string": MASKED,
            "exchange": "events",
            "id": sid,
            "receive_child_client_events": False,
            "routing_key": "audit",
        }

    async def test_new_connection_string_is_stored_encrypted(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        new = "amqp://svc:n3w-pass@mq2.example:5672/%2F"
        r = await client.patch(
            one(sid),
            json={"connection_string": new, "receive_child_client_events": True},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 200, r.text
        assert r.json()["connection_string"] == "amqp://svc:***@mq2.example:5672/%2F"
        assert r.json()["receive_child_client_events"] is True
        row = await stored(session, cl.ls.client_account.id)
        assert row is not None
        assert "n3w-pass" not in row.connection_string_encrypted
        assert plain(row) == new

    async def test_records_one_user_action_without_the_password(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        await client.patch(
            one(sid),
            json={"connection_string": "amqp://a:topsecret@h:1/v", "exchange": None},
            headers=auth(cl.ls.client_admin),
        )
        evs = await events(session)
        assert len(evs) == 1
        ev = evs[0]
        assert ev["api_group"] == "amqp_subscription" and ev["action_type"] == "update"
        assert ev["client_id"] == cl.ls.client_account.id
        assert ev["resources"] == [{"resource_id": str(sid), "resource_type": "amqp_subscription"}]
        assert ev["action_data"] == {"connection_string": "amqp://a:***@h:1/v", "exchange": None}
        assert "topsecret" not in str(ev)

    async def test_empty_body_changes_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(one(sid), json={}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 200
        assert r.json()["connection_string"] == MASKED
        assert await events(session) == []

    async def test_percent_encoded_password_is_understood(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        new = "amqp://us%3Aer:p%40ss%2Fw0rd@broker.example:5672/my%2Fvhost"
        r = await client.patch(
            one(sid), json={"connection_string": new}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        assert r.json()["connection_string"] == "amqp://us%3Aer:***@broker.example:5672/my%2Fvhost"
        row = await stored(session, cl.ls.client_account.id)
        assert row is not None and plain(row) == new

    @pytest.mark.parametrize(
        ("conn", "problem"),
        [
            ("http://u:p@host:5672/vh", "scheme"),
            ("amqp//u:p@host:5672/vh", "scheme"),
            ("amqp://u:p@:5672/vh", "host is missing"),
            ("amqp://u:p@host:0/vh", "port must be from 1 to 65535"),
            ("amqp://u:p@host:70000/vh", "port must be from 1 to 65535"),
            ("amqp://u:p@host:port/vh", "port must be a number"),
            ("amqp://u:p@host/vh", "port is missing"),
            ("amqp://u:p@host:5672/", "virtual host is missing"),
            ("amqp://u:p@host:5672", "virtual host is missing"),
            ("amqp://u:p@host:5672/a/b", "one path segment"),
            ("amqp://host:5672/vh", "user is missing"),
            ("amqp://:p@host:5672/vh", "user is missing"),
            ("amqp://u@host:5672/vh", "password is missing"),
            ("amqp://u:@host:5672/vh", "password is missing"),
            ("amqp://u:p@ss@host:5672/vh", "percent-encoded"),
            ("amqp://u:p%zz@host:5672/vh", "percent-encoding"),
            ("amqp://u:p@ho st:5672/vh", "spaces"),
            ("", "scheme"),
        ],
    )
    async def test_bad_connection_string_is_400_naming_the_problem(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        conn: str,
        problem: str,
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(
            one(sid), json={"connection_string": conn}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["exception_class"] == "ValidationError"
        assert list(body["invalid_fields"]) == ["connection_string"]
        assert problem in " ".join(body["invalid_fields"]["connection_string"]).lower()
        row = await stored(session, cl.ls.client_account.id)
        assert row is not None and plain(row) == CONN

    @pytest.mark.parametrize(
        "conn",
        [
            "amqp://u:p@h:1/v",
            "amqp://u:p@h:65535/v",
            "AMQPS://u:p@h.example:5671/v",
            "amqp://u:p@[2001:4860:4860::8888]:5672/v",
            "amqp://u:p@host:5672/v?heartbeat=30",
        ],
    )
    async def test_valid_connection_strings(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, conn: str
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(
            one(sid), json={"connection_string": conn}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 200, r.text
        assert ":***@" in r.json()["connection_string"]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"connection_string": None}, "connection_string"),
            ({"receive_child_client_events": None}, "receive_child_client_events"),
            ({"receive_child_client_events": "often"}, "receive_child_client_events"),
            ({"exchange": "x" * 256}, "exchange"),
            ({"routing_key": "x" * 256}, "routing_key"),
            ({"connection_string": 5}, "connection_string"),
        ],
    )
    async def test_bad_fields(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        body: dict[str, Any],
        field: str,
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(one(sid), json=body, headers=auth(cl.ls.client_admin))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [field]

    async def test_member_is_forbidden(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(
            one(sid), json={"routing_key": "x"}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 403
        assert r.json()["exception_class"] == "PermissionDenied"

    @pytest.mark.parametrize("who", ["reseller", "other_reseller", "foreign_admin"])
    async def test_another_accounts_subscription_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        key = getattr(cl, who, None) or getattr(cl.ls, who)
        r = await client.patch(one(sid), json={"routing_key": "x"}, headers=auth(key))
        assert r.status_code == 404
        r = await client.get(one(sid), headers=auth(key))
        assert r.status_code == 404

    async def test_operator_updates_any(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.patch(one(sid), json={"exchange": "ops"}, headers=auth(cl.ls.operator))
        assert r.status_code == 200
        ev = (await events(session))[0]
        assert ev["client_id"] == cl.ls.client_account.id

    async def test_reseller_admin_updates_its_own(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.reseller_account, CONN)).id
        r = await client.patch(
            one(sid), json={"receive_child_client_events": True}, headers=auth(cl.ls.reseller)
        )
        assert r.status_code == 200
        assert r.json()["receive_child_client_events"] is True

    @pytest.mark.parametrize("bad", ["abc", "0"])
    async def test_bad_subscription_id_is_400(
        self, client: httpx.AsyncClient, cl: CloudLandscape, bad: str
    ):
        r = await client.patch(
            f"{BASE}/amqp_subscriptions/{bad}", json={}, headers=auth(cl.ls.client_admin)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["subscription_id"]

    async def test_unknown_subscription_is_404(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.patch(one(99999), json={}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 404


class TestSubscribe:
    async def test_creates_the_accounts_subscription(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        r = await client.post(
            f"{BASE}/subscribe_amqp",
            json={"connection_string": CONN},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 204, r.text
        assert r.content == b""
        row = await stored(session, cl.ls.client_account.id)
        assert row is not None
        assert plain(row) == CONN and "s3cret" not in row.connection_string_encrypted
        assert row.receive_child_client_events is False
        assert row.exchange is None and row.routing_key is None
        evs = await events(session)
        assert [(e["api_group"], e["action_type"]) for e in evs] == [
            ("amqp_subscription", "create")
        ]
        assert evs[0]["action_data"]["connection_string"] == MASKED
        listed = (
            await client.get(f"{BASE}/amqp_subscriptions_list", headers=auth(cl.ls.client_member))
        ).json()
        assert listed == {
            "count": 1,
            "results": [
                {
                    "connection_string": MASKED,
                    "exchange": None,
                    "id": row.id,
                    "receive_child_client_events": False,
                    "routing_key": None,
                }
            ],
        }

    async def test_second_subscription_is_409(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_subscription(session, BOX, cl.ls.client_account, CONN)
        r = await client.post(
            f"{BASE}/subscribe_amqp",
            json={"connection_string": CONN},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"

    async def test_connection_string_required_and_validated(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.post(f"{BASE}/subscribe_amqp", json={}, headers=auth(cl.ls.client_admin))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["connection_string"]
        r = await client.post(
            f"{BASE}/subscribe_amqp",
            json={"connection_string": "amqp://u:p@h:0/v"},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["connection_string"]

    async def test_member_is_forbidden(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.post(
            f"{BASE}/subscribe_amqp",
            json={"connection_string": CONN},
            headers=auth(cl.ls.client_member),
        )
        assert r.status_code == 403


class TestUnsubscribe:
    async def test_deletes_the_accounts_subscription(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        r = await client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_admin))
        assert r.status_code == 204
        assert await stored(session, cl.ls.client_account.id) is None
        ev = (await events(session))[0]
        assert ev["action_type"] == "delete"
        assert ev["resources"][0]["resource_id"] == str(sid)

    async def test_without_subscription_is_404(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_admin))
        assert r.status_code == 404

    async def test_member_is_forbidden(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_subscription(session, BOX, cl.ls.client_account, CONN)
        r = await client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_member))
        assert r.status_code == 403
        assert await stored(session, cl.ls.client_account.id) is not None


class TestReadSubscriptions:
    async def test_get_one_masked(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = (
            await make_subscription(session, BOX, cl.ls.client_account, CONN, child_events=True)
        ).id
        r = await client.get(one(sid), headers=auth(cl.ls.client_member))
        assert r.status_code == 200
        got = r.json()
        assert set(got) == FIELDS
        assert got["connection_string"] == MASKED
        assert got["receive_child_client_events"] is True

    async def test_list_shows_only_the_callers_account(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        mine = (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id
        await make_subscription(session, BOX, cl.foreign_account, CONN)
        r = await client.get(f"{BASE}/amqp_subscriptions_list", headers=auth(cl.ls.client_admin))
        got = r.json()
        assert got["count"] == 1 and [s["id"] for s in got["results"]] == [mine]

    async def test_operator_lists_all_and_filters(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_subscription(session, BOX, cl.ls.client_account, CONN)
        theirs = (await make_subscription(session, BOX, cl.foreign_account, CONN)).id
        r = await client.get(f"{BASE}/amqp_subscriptions_list", headers=auth(cl.ls.operator))
        assert r.json()["count"] == 2
        r = await client.get(
            f"{BASE}/amqp_subscriptions_list",
            params={"client_id": cl.foreign_account.id},
            headers=auth(cl.ls.operator),
        )
        assert [s["id"] for s in r.json()["results"]] == [theirs]

    @pytest.mark.parametrize(("param", "value"), [("limit", 0), ("limit", 1001), ("offset", -1)])
    async def test_list_bounds(
        self, client: httpx.AsyncClient, cl: CloudLandscape, param: str, value: int
    ):
        r = await client.get(
            f"{BASE}/amqp_subscriptions_list",
            params={param: value},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [param]
