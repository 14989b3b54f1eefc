"""A reseller's branding settings are checked by one set of field types: a load refuses
what a PUT of the settings refuses, and takes what it takes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.kit.crypto import SecretBox
from tests.factories import auth
from tests.facts.doors import RESELLER, base_landscape, importer_accepts

RESELLER_ACCOUNT = 1000  # the example document's reseller account, RESELLER's

# (where the value goes, the value, whether it is refused)
CASES = [
    (("domain",), "panel.acme.example", False),
    (("domain",), "acme_example!", True),
    (("publicSettings", "websiteLink"), "https://acme.example", False),
    (("publicSettings", "websiteLink"), "javascript:alert(1)", True),
    (("publicSettings", "agreementLink"), "ftp://acme.example/terms", True),
    (("publicSettings", "entryBaseDomain"), "panel.acme.example", False),
    (("publicSettings", "entryBaseDomain"), "not a domain", True),
    (("publicSettings", "brandName"), "x" * 256, True),
    (("publicSettings", "supportPhone"), "+1 555 0100", False),
    (("publicSettings", "colors", "primary"), "#ff0000", False),
    (("publicSettings", "colors", "primary"), "#" + "f" * 40, True),
    (("privateSettings", "mailServer", "port"), "587", False),
    (("privateSettings", "mailServer", "port"), 587, False),
    (("privateSettings", "mailServer", "port"), "70000", True),
    (("privateSettings", "mailServer", "port"), "25a", True),
    (("privateSettings", "mailServer", "login"), "l" * 256, True),
]


def settings(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """The settings with every required flag, and ``value`` at ``path``."""
    body: dict[str, Any] = {
        "domain": "acme.example",
        "publicSettings": {
            "showApiDoc": True,
            "showStatusPage": "false",
            "showKnowledgeBase": False,
            "showTickets": True,
        },
        "privateSettings": {"mailServer": {"host": "smtp.acme.example"}},
    }
    place = body
    for key in path[:-1]:
        place = place.setdefault(key, {})
    place[path[-1]] = value
    return body


class TestBothDoors:
    @pytest.mark.parametrize(("path", "value", "refused"), CASES)
    async def test_same_outcome(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        box: SecretBox,
        path: tuple[str, ...],
        value: Any,
        refused: bool,
    ) -> None:
        await base_landscape(session, box)
        record = {"reseller": RESELLER_ACCOUNT, **settings(path, value)}
        imported = await importer_accepts(session, box, {"branding": [record]})

        put = await client.put(
            "/iam/reselling/settings", json=settings(path, value), headers=auth(RESELLER)
        )
        assert put.status_code in (200, 400), put.text
        assert (not imported, put.status_code == 400) == (refused, refused), put.text
