"""Branding rows."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding, Client


async def get_reseller(session: AsyncSession, reseller_id: int) -> Client | None:
    stmt = select(Client).where(
        Client.id == reseller_id, Client.client_type == "reseller", Client.deleted.is_(False)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def get(session: AsyncSession, reseller_id: int) -> Branding | None:
    stmt = select(Branding).where(Branding.reseller_id == reseller_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_or_add(session: AsyncSession, reseller_id: int) -> Branding:
    branding = await get(session, reseller_id)
    if branding is None:
        branding = Branding(
            reseller_id=reseller_id, domain="", public_settings={}, mail_server={}, deleted=False
        )
        session.add(branding)
        await session.flush()
    return branding
