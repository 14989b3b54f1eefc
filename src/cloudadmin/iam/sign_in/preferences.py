"""What a person keeps in a console, by name (saved filter presets, a table's columns):
a JSON value per principal (``PortalUser.principal``). Services flush; the request's
transaction commits."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models.portal import PortalPreference
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError

# A preference's value, as JSON text, at most this long: presets and column lists are
# small, and a person's rows stay bounded whatever a form sends.
MAX_VALUE_CHARS = 16_384


async def get(db: AsyncSession, principal: str, name: str, default: Any = None) -> Any:
    row = await db.get(PortalPreference, (principal, name))
    return default if row is None else row.value


async def put(db: AsyncSession, principal: str, name: str, value: Any) -> None:
    if len(json.dumps(value)) > MAX_VALUE_CHARS:
        raise ValidationError(f"Too much to keep (at most {MAX_VALUE_CHARS} characters).")
    row = await db.get(PortalPreference, (principal, name))
    if row is None:
        db.add(PortalPreference(principal=principal, name=name, value=value, updated_at=utcnow()))
    else:
        row.value = value
        row.updated_at = utcnow()
    await db.flush()
