"""An AMQP connection string is valid at the importer exactly when it is at the API."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.kit.crypto import SecretBox
from tests.factories import auth
from tests.facts.doors import CLIENT, base_landscape, importer_accepts

CASES = [
    ("amqps://events:s3cret@broker.example:5671/prod", True),
    ("amqp://svc:p%40ss@mq.example:5672/%2F", True),
    ("amqp://svc:pass@[::1]:5672/v", True),
    ("amqp://svc:pass@127.0.0.1:5672/v", True),
    ("amqp://svc:pass@h:5672/v#frag", False),
    ("amqp://svc:p%zzss@h:5672/v", False),
    ("amqp://svc:pass@h:5672/v%2", False),
    ("amqp://svc:@h:5672/v", False),
    ("amqp://svc:pass@h:5672/", False),
    ("amqp://svc:pass@h:5672/a/b", False),
    ("amqp://svc:pass@h:99999/v", False),
    ("amqp://svc:pass@h/v", False),
    ("amqp://h:5672/v", False),
    ("amqp://sv@c:pass@h:5672/v", False),
    ("http://svc:pass@h:5672/v", False),
    ("amqp://svc:pass@bad_host-:5672/v", False),
    ("amqp://svc:pass@h:5672/" + "v" * 2100, False),
]


class TestBothDoors:
    @pytest.mark.parametrize(("url", "valid"), CASES)
    async def test_same_outcome(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        box: SecretBox,
        url: str,
        valid: bool,
    ) -> None:
        await base_landscape(session, box)
        sub = {"id": 1, "client": 2001, "connection_string": url}
        imported = await importer_accepts(session, box, {"amqp_subscriptions": [sub]})
        r = await client.post(
            "/cloud/v1/user_actions/subscribe_amqp",
            json={"connection_string": url},
            headers=auth(CLIENT),
        )
        assert r.status_code in (204, 400), r.text
        assert (imported, r.status_code == 204) == (valid, valid), r.text
