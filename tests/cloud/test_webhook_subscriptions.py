"""Webhook subscriptions: subscribe, unsubscribe, subscriptions_list (the provider's
three), for each kind of caller, on both databases."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry, WebhookSubscription
from cloudadmin.kit.crypto import SecretBox
from tests.cloud.helpers import SECRET_KEY, CloudLandscape, cloud_landscape, events
from tests.factories import auth, next_id

BASE = "/cloud/v1/user_actions"
SUBSCRIBE, UNSUBSCRIBE, LIST = (
    f"{BASE}/subscribe",
    f"{BASE}/unsubscribe",
    f"{BASE}/subscriptions_list",
)
URL = "https://hooks.shop.example/user-actions?source=cloud"
SECRET = "Bearer wh-s3cret-value"
BODY = {"url": URL, "auth_header_name": "Authorization", "auth_header_value": SECRET}
NOT_ALLOWED = "Connections to this address are not allowed: "


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


async def stored(session: AsyncSession, client_id: int) -> dict[str, Any] | None:
    row = (
        await session.execute(
            select(
                WebhookSubscription.id,
                WebhookSubscription.url,
                WebhookSubscription.auth_header_name,
                WebhookSubscription.auth_header_value_encrypted,
            ).where(WebhookSubscription.client_id == client_id)
        )
    ).first()
    await session.commit()  # end the read: on SQLite it holds the database lock
    return None if row is None else dict(row._mapping)


async def make_webhook(session: AsyncSession, client_id: int, url: str = URL) -> int:
    sid = next_id()
    session.add(
        WebhookSubscription(
            id=sid,
            client_id=client_id,
            url=url,
            auth_header_name="Authorization",
            auth_header_value_encrypted=SecretBox(SECRET_KEY).encrypt(SECRET),
        )
    )
    await session.commit()
    return sid


async def activity_data(session: AsyncSession) -> list[str]:
    rows = (await session.execute(select(ActivityLogEntry.data))).scalars().all()
    await session.commit()
    return list(rows)


def invalid_fields(r: httpx.Response) -> dict[str, list[str]]:
    assert r.status_code == 400, r.text
    return r.json()["invalid_fields"]  # type: ignore[no-any-return]


class TestSubscribe:
    async def test_creates_the_accounts_subscription(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(cl.ls.client_admin))
        assert r.status_code == 204, r.text
        assert r.content == b""
        row = await stored(session, cl.ls.client_account.id)
        assert row is not None
        assert row["url"] == URL and row["auth_header_name"] == "Authorization"
        assert "wh-s3cret" not in row["auth_header_value_encrypted"]
        assert SecretBox(SECRET_KEY).decrypt(row["auth_header_value_encrypted"]) == SECRET
        listed = await client.get(LIST, headers=auth(cl.ls.client_member))
        assert listed.json() == {
            "count": 1,
            "results": [
                {
                    "id": row["id"],
                    "url": URL,
                    "auth_header_name": "Authorization",
                    "auth_header_value": "***",
                }
            ],
        }

    async def test_records_a_user_action_and_logs_without_the_secret(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(cl.ls.client_admin))
        assert r.status_code == 204
        [ev] = await events(session, "webhook_subscription")
        assert ev["action_type"] == "create"
        assert ev["action_data"] == {**BODY, "auth_header_value": "***"}
        [logged] = await activity_data(session)
        assert json.loads(logged)["auth_header_value"] == "***"
        assert "wh-s3cret" not in logged

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_resellers_and_operators_subscribe_their_own_account(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 204, r.text
        listed = (await client.get(LIST, headers=auth(getattr(cl.ls, who)))).json()
        assert [s["url"] for s in listed["results"]] == [URL]
        assert await stored(session, cl.ls.client_account.id) is None

    async def test_member_is_forbidden(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(cl.ls.client_member))
        assert r.status_code == 403
        assert await stored(session, cl.ls.client_account.id) is None

    async def test_second_subscription_is_409(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_webhook(session, cl.ls.client_account.id)
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(cl.ls.client_admin))
        assert r.status_code == 409
        assert r.json()["exception_class"] == "ConflictError"

    async def test_another_accounts_subscription_is_no_obstacle(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_webhook(session, cl.foreign_account.id)
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(cl.ls.client_admin))
        assert r.status_code == 204

    async def test_a_retry_with_the_same_idempotency_key_creates_once(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        headers = {**auth(cl.ls.client_admin), "Idempotency-Key": "wh-1"}
        first = await client.post(SUBSCRIBE, json=BODY, headers=headers)
        again = await client.post(SUBSCRIBE, json=BODY, headers=headers)
        assert (first.status_code, again.status_code) == (204, 204)
        assert len(await events(session, "webhook_subscription")) == 1


class TestSubscribeValidation:
    async def test_every_field_is_required(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.post(SUBSCRIBE, json={}, headers=auth(cl.ls.client_admin))
        assert set(invalid_fields(r)) == {"url", "auth_header_name", "auth_header_value"}

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            ("ftp://hooks.example/in", "The scheme must be http:// or https://."),
            ("hooks.example/in", "The scheme must be http:// or https://."),
            ("https:///in", "The host is missing."),
            (
                "https://user:pw@hooks.example/in",
                "The URL must not carry a user name or password (send the credential in the auth "
                "header).",
            ),
            ("https://hooks.example/in#x", "The URL must not have a fragment (#)."),
            ("https://hooks.example:99999/in", "Enter a valid URL."),
            ("https://hooks example/in", "The URL must not contain spaces or control characters."),
            ("https://ho$ts.example/in", "The host is not a valid host name or address."),
            (
                "https://hooks.example/" + "a" * 2048,
                "Ensure this value has at most 2048 characters.",
            ),
        ],
    )
    async def test_bad_url(
        self, client: httpx.AsyncClient, cl: CloudLandscape, url: str, message: str
    ):
        r = await client.post(
            SUBSCRIBE, json={**BODY, "url": url}, headers=auth(cl.ls.client_admin)
        )
        assert invalid_fields(r) == {"url": [message]}

    @pytest.mark.parametrize(
        ("host", "why"),
        [
            ("10.1.2.3", "10.1.2.3 is a private address."),
            ("169.254.169.254", "169.254.169.254 is a cloud metadata address."),
            ("[fd00:ec2::254]", "fd00:ec2::254 is a cloud metadata address."),
            ("metadata.google.internal", "metadata.google.internal is the cloud metadata service."),
        ],
    )
    async def test_refused_address(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        host: str,
        why: str,
    ):
        r = await client.post(
            SUBSCRIBE, json={**BODY, "url": f"http://{host}/in"}, headers=auth(cl.ls.client_admin)
        )
        assert invalid_fields(r) == {"url": [NOT_ALLOWED + why]}
        assert await stored(session, cl.ls.client_account.id) is None

    @pytest.mark.parametrize(
        ("name", "message"),
        [
            ("", "This field may not be blank."),
            ("Bad Header", "Enter a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)."),
            ("X-Auth:", "Enter a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)."),
            ("X-Auth\n", "Enter a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)."),
            ("Host", "The header Host is set by the service and cannot be used."),
            (
                "content-length",
                "The header content-length is set by the service and cannot be used.",
            ),
        ],
    )
    async def test_bad_header_name(
        self, client: httpx.AsyncClient, cl: CloudLandscape, name: str, message: str
    ):
        r = await client.post(
            SUBSCRIBE, json={**BODY, "auth_header_name": name}, headers=auth(cl.ls.client_admin)
        )
        assert invalid_fields(r) == {"auth_header_name": [message]}

    @pytest.mark.parametrize(
        "value", ["", "Bearer x\r\nX-Injected: 1", "Bearer x\n", "Bearer ünïcode", " padded"]
    )
    async def test_bad_header_value_is_not_quoted_back(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, value: str
    ):
        r = await client.post(
            SUBSCRIBE, json={**BODY, "auth_header_value": value}, headers=auth(cl.ls.client_admin)
        )
        assert list(invalid_fields(r)) == ["auth_header_value"]
        if value:
            assert value.strip() not in r.text
            assert all(value.strip() not in d for d in await activity_data(session))

    async def test_every_problem_at_once(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.post(
            SUBSCRIBE,
            json={"url": "ftp://x", "auth_header_name": "a b", "auth_header_value": "\n"},
            headers=auth(cl.ls.client_admin),
        )
        assert set(invalid_fields(r)) == {"url", "auth_header_name", "auth_header_value"}


class TestUnsubscribe:
    async def test_deletes_the_accounts_subscription(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        sid = await make_webhook(session, cl.ls.client_account.id)
        r = await client.post(UNSUBSCRIBE, headers=auth(cl.ls.client_admin))
        assert r.status_code == 204 and r.content == b""
        assert await stored(session, cl.ls.client_account.id) is None
        [ev] = await events(session, "webhook_subscription")
        assert ev["action_type"] == "delete"
        assert ev["resources"] == [
            {"resource_id": str(sid), "resource_type": "webhook_subscription"}
        ]

    async def test_without_subscription_is_404(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        # Another account's subscription is not the caller's to delete.
        await make_webhook(session, cl.foreign_account.id)
        r = await client.post(UNSUBSCRIBE, headers=auth(cl.ls.client_admin))
        assert r.status_code == 404
        assert await stored(session, cl.foreign_account.id) is not None

    async def test_member_is_forbidden(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_webhook(session, cl.ls.client_account.id)
        r = await client.post(UNSUBSCRIBE, headers=auth(cl.ls.client_member))
        assert r.status_code == 403
        assert await stored(session, cl.ls.client_account.id) is not None

    @pytest.mark.parametrize("who", ["reseller", "operator"])
    async def test_resellers_and_operators_unsubscribe_their_own_account(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        await make_webhook(session, cl.ls.client_account.id)
        r = await client.post(SUBSCRIBE, json=BODY, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 204
        r = await client.post(UNSUBSCRIBE, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 204
        # The client's own subscription is not theirs to delete.
        assert await stored(session, cl.ls.client_account.id) is not None


class TestList:
    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_shows_only_the_callers_account(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape, who: str
    ):
        mine = await make_webhook(session, cl.ls.client_account.id)
        await make_webhook(session, cl.foreign_account.id)
        await make_webhook(session, cl.ls.reseller_account.id)
        r = await client.get(LIST, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 200
        assert r.json() == {
            "count": 1,
            "results": [
                {
                    "id": mine,
                    "url": URL,
                    "auth_header_name": "Authorization",
                    "auth_header_value": "***",
                }
            ],
        }
        assert "wh-s3cret" not in r.text

    async def test_a_reseller_does_not_see_its_clients(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_webhook(session, cl.ls.client_account.id)
        r = await client.get(LIST, headers=auth(cl.ls.reseller))
        assert r.json() == {"count": 0, "results": []}

    async def test_operator_lists_all_and_pages(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        first = await make_webhook(session, cl.ls.client_account.id)
        second = await make_webhook(session, cl.foreign_account.id)
        r = await client.get(LIST, headers=auth(cl.ls.operator))
        assert r.json()["count"] == 2
        assert [s["id"] for s in r.json()["results"]] == sorted([first, second])
        r = await client.get(LIST, params={"limit": 1, "offset": 1}, headers=auth(cl.ls.operator))
        assert r.json()["count"] == 2
        assert [s["id"] for s in r.json()["results"]] == [max(first, second)]

    @pytest.mark.parametrize(
        ("param", "value"), [("limit", 0), ("limit", 1001), ("offset", -1), ("limit", "x")]
    )
    async def test_bounds(
        self, client: httpx.AsyncClient, cl: CloudLandscape, param: str, value: object
    ):
        r = await client.get(LIST, params={param: value}, headers=auth(cl.ls.client_admin))
        assert list(invalid_fields(r)) == [param]


class TestOpenApi:
    async def test_the_three_operations_are_described(self, app: FastAPI):
        spec = app.openapi()
        paths = spec["paths"]
        assert set(paths[SUBSCRIBE]) == {"post"} and set(paths[UNSUBSCRIBE]) == {"post"}
        assert "204" in paths[SUBSCRIBE]["post"]["responses"]
        body = paths[SUBSCRIBE]["post"]["requestBody"]["content"]["application/json"]["schema"]
        schema = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
        assert set(schema["required"]) == {"url", "auth_header_name", "auth_header_value"}
        listed = paths[LIST]["get"]["responses"]["200"]["content"]["application/json"]
        assert listed["schema"]["$ref"].endswith("/WebhookSubscriptionList")
        assert {p["name"] for p in paths[LIST]["get"]["parameters"]} == {"limit", "offset"}
