"""A reseller's mail server host is a host name or an IP address, checked when it is
saved, by the API and by `cloudadmin load` alike: a user, a port, a scheme or a space
in it would otherwise be stored and fail only when a mail is sent."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.kit.crypto import SecretBox
from tests.factories import auth
from tests.facts.doors import RESELLER, base_landscape, importer_accepts

RESELLER_ACCOUNT = 1000  # the example document's reseller account, RESELLER's
FIELD = "privateSettings.mailServer.host"

REFUSED = [
    "u@127.0.0.2",
    "127.0.0.2:25",
    "smtp.acme.example:587",
    "smtp://smtp.acme.example",
    "smtp.acme.example/",
    "smtp acme.example",
    " smtp.acme.example",
    "smtp.acme.example\n",
    "-smtp.acme.example",
    "smtp..acme.example",
    "smtp_relay.acme.example",
    "x" * 64 + ".acme.example",
    "[2606:4700::1111]:25",
]
ACCEPTED = [
    "smtp.acme.example",
    "SMTP.Acme.Example",
    "mail",
    "smtp.acme.example.",
    "почта.acme.example",
    "1.1.1.1",
    "2606:4700::1111",
    "[2606:4700::1111]",
    "127.0.0.2",  # loopback: the outbound policy's question (tests allow loopback)
]


def settings(host: Any) -> dict[str, Any]:
    return {
        "domain": "acme.example",
        "publicSettings": {
            "showApiDoc": True,
            "showStatusPage": "false",
            "showKnowledgeBase": False,
            "showTickets": True,
        },
        "privateSettings": {"mailServer": {"host": host, "port": "587"}},
    }


class TestMailServerHost:
    @pytest.mark.parametrize("host", REFUSED)
    async def test_not_a_host_is_400_naming_the_field(
        self, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox, host: str
    ):
        await base_landscape(session, box)
        r = await client.put("/iam/reselling/settings", json=settings(host), headers=auth(RESELLER))
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == [FIELD], r.text
        stored = await client.get("/iam/reselling/settings", headers=auth(RESELLER))
        assert stored.json()["privateSettings"]["mailServer"].get("host") != host

    @pytest.mark.parametrize("host", REFUSED)
    async def test_the_load_refuses_it_too(self, session: AsyncSession, box: SecretBox, host: str):
        await base_landscape(session, box)
        record = {"reseller": RESELLER_ACCOUNT, **settings(host)}
        assert not await importer_accepts(session, box, {"branding": [record]})

    @pytest.mark.parametrize("host", ACCEPTED)
    async def test_host_names_and_addresses_are_kept(
        self, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox, host: str
    ):
        await base_landscape(session, box)
        record = {"reseller": RESELLER_ACCOUNT, **settings(host)}
        assert await importer_accepts(session, box, {"branding": [record]})
        r = await client.put("/iam/reselling/settings", json=settings(host), headers=auth(RESELLER))
        assert r.status_code == 200, r.text
        assert r.json()["privateSettings"]["mailServer"]["host"] == host
