"""POST /cloud/v1/user_actions/subscribe_amqp_test against the real RabbitMQ."""

from __future__ import annotations

import json

import httpx

from tests.events.conftest import Inbox
from tests.factories import Landscape, auth

URL = "/cloud/v1/user_actions/subscribe_amqp_test"


class TestSubscribeAmqpTest:
    async def test_sends_a_test_message(
        self, client: httpx.AsyncClient, ls: Landscape, inbox: Inbox, rabbit_url: str
    ):
        r = await client.post(
            URL,
            json={
                "connection_string": rabbit_url,
                "exchange": inbox.exchange,
                "routing_key": inbox.routing_key,
            },
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 204, r.text
        [message] = await inbox.drain(1)
        body = json.loads(message.body)
        assert body["test"] is True and body["client_id"] == ls.client_account.id

    async def test_unreachable_broker_is_400_naming_why(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(
            URL,
            json={"connection_string": "amqp://guest:very-secret@127.0.0.1:1/%2F"},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 400
        [why] = r.json()["invalid_fields"]["connection_string"]
        assert "127.0.0.1:1" in why and "very-secret" not in r.text

    async def test_missing_exchange_is_refused(
        self, client: httpx.AsyncClient, ls: Landscape, rabbit_url: str
    ):
        r = await client.post(
            URL,
            json={"connection_string": rabbit_url, "exchange": "no-such-exchange-here"},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 400
        assert "connection_string" in r.json()["invalid_fields"]

    async def test_members_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, rabbit_url: str
    ):
        r = await client.post(
            URL, json={"connection_string": rabbit_url}, headers=auth(ls.client_member)
        )
        assert r.status_code == 403
