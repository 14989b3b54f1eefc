"""The failed-login mail for a refused portal sign-in: the API's (events/mail.py), sent
to the reseller's ``failed_login`` addresses through the outbox, at most once per user
per interval (``auth.service.notice_due``, as per API key)."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.db.models import Client, PortalFailedSignInNotice, User
from cloudadmin.events.mail import note_failed_authentication

log = logging.getLogger("cloudadmin.portal")


async def note_failed_sign_in(
    sessions: async_sessionmaker[AsyncSession], *, user_id: int, source_ip: str
) -> None:
    """In a transaction of its own: the refusal is answered whatever happens here."""

    async def account(db: AsyncSession) -> Client | None:
        return await db.scalar(
            select(Client).join(User, User.client_id == Client.id).where(User.id == user_id)
        )

    await note_failed_authentication(
        sessions,
        PortalFailedSignInNotice,
        user_id,
        account,
        lambda account_id, when: (
            f"A sign-in to the Admin Portal as user {user_id} of account "
            f"{account_id} was refused at {when} (from {source_ip or 'unknown'}).\n"
        ),
        log=log,
        what="failed sign-in notice",
    )
