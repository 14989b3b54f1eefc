"""Arranging cloud data: projects, regions, listeners, policies, prices, subscriptions."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import (
    Client,
    LifecyclePolicy,
    Listener,
    PriceCatalogue,
    Project,
    Region,
    UserActionEvent,
)
from cloudadmin.kit.crypto import SecretBox
from tests.factories import (
    Landscape,
    groups_by_id,
    landscape,
    make_client,
    make_key,
    make_user,
    next_id,
)

SECRET_KEY = "test-secret-key"  # conftest's Settings.secret_key
# What the app encrypts with (app_state(app).secret_box), for rows arranged without the app.
BOX = SecretBox(SECRET_KEY)


class CloudLandscape:
    """The common landscape plus a project of the client, one of another client, a region."""

    ls: Landscape
    region: int
    other_region: int
    project: int
    reseller_project: int
    foreign_project: int
    engineer: str
    foreign_admin: str
    foreign_account: Client


async def make_region(session: AsyncSession, name: str | None = None, *, flush: bool = True) -> int:
    rid = next_id()
    session.add(Region(id=rid, name=name or f"Region {rid}"))
    if flush:
        await session.flush()
    return rid


async def make_project(session: AsyncSession, client_id: int, *, flush: bool = True) -> int:
    pid = next_id()
    session.add(Project(id=pid, client_id=client_id, name=f"project {pid}"))
    if flush:
        await session.flush()
    return pid


async def cloud_landscape(session: AsyncSession) -> CloudLandscape:
    c = CloudLandscape()
    c.ls = await landscape(session)
    # Added, then written in one flush (landscape's way).
    groups = await groups_by_id(session, 1, 5)
    with session.no_autoflush:
        c.region = await make_region(session, "Luxembourg-2", flush=False)
        c.other_region = await make_region(session, "Frankfurt", flush=False)
        c.project = await make_project(session, c.ls.client_account.id, flush=False)
        c.reseller_project = await make_project(session, c.ls.reseller_account.id, flush=False)
        c.foreign_account = await make_client(
            session, reseller_id=c.ls.reseller_account.id, flush=False
        )
        c.foreign_project = await make_project(session, c.foreign_account.id, flush=False)
        foreign_admin = await make_user(
            session, c.foreign_account, flush=False, known_groups=groups
        )
        c.foreign_admin = await make_key(session, foreign_admin, flush=False)
        engineer = await make_user(
            session, c.ls.client_account, groups=(5,), flush=False, known_groups=groups
        )
        c.engineer = await make_key(session, engineer, flush=False)
    await session.commit()
    return c


async def make_listener(session: AsyncSession, project_id: int, region_id: int, **over: Any) -> str:
    lid = over.pop("id", None) or str(uuid.uuid4())
    fields: dict[str, Any] = {
        "name": "http-80",
        "allowed_cidrs": ["10.0.0.0/8"],
        "connection_limit": 100000,
        "creator_task_id": str(uuid.uuid4()),
        "insert_headers": {"X-Forwarded-For": "true"},
        "load_balancer_id": str(uuid.uuid4()),
        "operating_status": "ONLINE",
        "pool_count": 1,
        "protocol": "HTTP",
        "protocol_port": 80,
        "provisioning_status": "ACTIVE",
        "secret_id": None,
        "sni_secret_id": None,
        "stats": {
            "active_connections": 3,
            "bytes_in": 1024,
            "bytes_out": 2048,
            "request_errors": 1,
            "total_connections": 42,
        },
        "task_id": None,
        "timeout_client_data": 50000,
        "timeout_member_connect": 5000,
        "timeout_member_data": None,
        "user_list": [{"encrypted_password": "$6$abc", "username": "admin"}],
    }
    fields.update(over)
    session.add(Listener(id=lid, project_id=project_id, region_id=region_id, **fields))
    await session.commit()
    return lid


async def make_policy(session: AsyncSession, project_id: int, region_id: int, **over: Any) -> int:
    pid = next_id()
    fields: dict[str, Any] = {
        "name": "nightly",
        "action": "volume_snapshot",
        "status": "active",
        "user_id": 77,
        "schedules": [],
        "volumes": [],
    }
    fields.update(over)
    session.add(LifecyclePolicy(id=pid, project_id=project_id, region_id=region_id, **fields))
    await session.commit()
    return pid


async def make_prices(session: AsyncSession, region_id: int, **over: Any) -> None:
    fields: dict[str, Any] = {
        "currency_code": "EUR",
        "flavors": {},
        "volume_types": {},
        "public_ipv4_per_hour": "0",
        "tax_percent": "0",
        "discount_percent": "0",
    }
    fields.update(over)
    session.add(PriceCatalogue(region_id=region_id, **fields))
    await session.commit()


async def events(session: AsyncSession, api_group: str | None = None) -> list[dict[str, Any]]:
    rows = (
        (
            await session.execute(
                select(UserActionEvent)
                .order_by(UserActionEvent.id)
                .execution_options(populate_existing=True)
            )
        )
        .scalars()
        .all()
    )
    bodies = [r.body for r in rows]
    await session.commit()  # end the read: on SQLite it holds the database lock
    if api_group is not None:
        bodies = [b for b in bodies if b["api_group"] == api_group]
    return bodies
