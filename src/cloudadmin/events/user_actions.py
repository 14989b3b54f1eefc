"""Recording user actions into the outbox (delivered by the events dispatcher).

Every state-changing operation calls :func:`record` inside its own transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.db.models import UserActionEvent
from cloudadmin.db.types import utcnow
from cloudadmin.kit.redact import redact
from cloudadmin.kit.timeparse import isoformat_z


@dataclass(frozen=True, slots=True)
class Actor:
    """The caller plus what the request says about where it came from."""

    caller: Caller
    source_ip: str
    user_agent: str
    request_id: str


@dataclass(frozen=True, slots=True)
class Resource:
    resource_type: str
    resource_id: str | int


async def record(
    session: AsyncSession,
    actor: Actor,
    *,
    action_type: str,
    api_group: str,
    resources: list[Resource],
    client_id: int,
    reseller_id: int | None,
    action_data: dict[str, Any],
    project_id: int | None = None,
    region_id: int | None = None,
) -> UserActionEvent:
    """Adds one event to the outbox; ``action_data`` (the changed fields) is redacted."""
    now = utcnow()
    event_id = str(uuid.uuid4())
    caller = actor.caller
    body = {
        "id": event_id,
        "action_type": action_type,
        "api_group": api_group,
        "resources": [
            {"resource_id": str(r.resource_id), "resource_type": r.resource_type}
            for r in resources
        ],
        "client_id": client_id,
        "user_id": caller.user_id,
        "email": caller.user_email,
        "token_id": caller.key_id,
        "project_id": project_id,
        "region_id": region_id,
        "source_user_ip": actor.source_ip,
        "user_agent": actor.user_agent,
        "timestamp": isoformat_z(now),
        "action_data": redact(action_data),
        "request_id": actor.request_id,
    }
    event = UserActionEvent(
        event_id=event_id, client_id=client_id, reseller_id=reseller_id, body=body,
        created_at=now,
    )
    session.add(event)
    return event
