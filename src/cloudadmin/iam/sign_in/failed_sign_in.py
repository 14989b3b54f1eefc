"""The failed-login mail for a refused portal sign-in: the API's (events/mail.py), sent
to the reseller's ``failed_login`` addresses through the outbox, at most once per user
per interval (``auth.service.notice_due``, as per API key)."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.auth.service import notice_due
from cloudadmin.db.models import Client, PortalFailedSignInNotice, User
from cloudadmin.db.types import utcnow
from cloudadmin.events.mail import enqueue, reseller_of
from cloudadmin.kit.timeparse import isoformat_z

log = logging.getLogger("cloudadmin.portal")


async def note_failed_sign_in(
    sessions: async_sessionmaker[AsyncSession], *, user_id: int, source_ip: str
) -> None:
    """In a transaction of its own: the refusal is answered whatever happens here."""
    now = utcnow()
    try:
        async with sessions() as db, db.begin():
            notice = await db.get(PortalFailedSignInNotice, user_id, with_for_update=True)
            if notice is not None and not notice_due(notice.last_sent_at, now):
                return
            found = (
                await db.execute(
                    select(User.client_id, Client)
                    .join(Client, Client.id == User.client_id)
                    .where(User.id == user_id)
                )
            ).first()
            if found is None:
                return
            account_id, account = found
            reseller_id = reseller_of(account)
            if reseller_id is None:
                return
            if notice is None:
                db.add(PortalFailedSignInNotice(user_id=user_id, last_sent_at=now))
            else:
                notice.last_sent_at = now
            await enqueue(
                db,
                kind="failed_login",
                reseller_id=reseller_id,
                subject=f"Failed login to account {account_id}",
                body=(
                    f"A sign-in to the Admin Portal as user {user_id} of account "
                    f"{account_id} was refused at {isoformat_z(now)} "
                    f"(from {source_ip or 'unknown'}).\n"
                ),
            )
    except IntegrityError:  # another process noted the same user at the same moment
        return
    except Exception:  # a notice must never turn a refusal into a 500
        log.exception("could not queue the failed sign-in notice")
