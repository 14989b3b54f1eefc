"""Exporting in-process, and a landscape with every kind of record the loader knows."""

from __future__ import annotations

import io
from typing import Any

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import Client
from cloudadmin.demo.landscape import build_demo
from cloudadmin.exporter.command import export_to
from cloudadmin.importer import load_into
from cloudadmin.importer.kinds import KINDS


async def export_text(settings: Settings) -> str:
    buffer = io.StringIO()
    await export_to(settings, buffer)
    return buffer.getvalue()


async def full_landscape(
    settings: Settings, client: httpx.AsyncClient, session: AsyncSession
) -> dict[str, str]:
    """The demo landscape (every record kind), plus what only the service writes: a
    token issued through the API (description, role, last use) and a personal product
    availability. Returns the demo's API keys and the issued token."""
    # With a broker and a mail server the demo also has a subscription and a mail password
    # (neither is connected to here).
    document, keys = build_demo(
        amqp_url="amqp://demo:broker-pass@127.0.0.1:5672/%2F", smtp=("127.0.0.1", 2525)
    )
    assert {kind.key for kind in KINDS} <= set(document), "the demo lacks a record kind"
    await load_into(settings, document)
    headers = {"Authorization": f"apikey {keys['client_admin']}"}
    issued = await client.post(
        "/iam/clients/2001/tokens",
        headers=headers,
        json={
            "name": "CI",
            "description": "deploys",
            "exp_date": "2031-01-01T00:00:00Z",
            "client_user": {"role": {"id": 2, "name": "Users"}},
        },
    )
    assert issued.status_code == 200, issued.text
    token = issued.json()["token"]
    used = await client.get(
        "/iam/clients/2001/tokens", headers={"Authorization": f"apikey {token}"}
    )
    assert used.status_code == 200, used.text
    await session.execute(
        update(Client).where(Client.id == 2002).values(service_availability={"CDN": False})
    )
    await session.commit()
    return {**keys, "issued": token}


def without(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in keys}
