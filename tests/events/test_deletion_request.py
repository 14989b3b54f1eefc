"""DELETE /iam/clients/{clientId}: deletion request, its mail and its effect on keys."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import MailMessage, UserActionEvent
from cloudadmin.events.dispatcher import Dispatcher
from tests.events.conftest import Mailbox
from tests.events.test_mail import configure_mail, send_all
from tests.factories import Landscape, auth

LOG = "/iam/activity_log/requests"


class TestDeletionRequest:
    async def test_admin_requests_deletion_and_reseller_is_mailed(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        account_id = ls.client_account.id
        r = await client.delete(f"/iam/clients/{account_id}", headers=auth(ls.client_admin))
        assert r.status_code == 204, r.text
        await send_all(dispatcher)
        [mail] = mailbox.messages
        assert mail["to"] == ["del@acme.example"]
        assert str(account_id) in mail["subject"]
        # The account's users and keys stop working at once.
        assert (await client.get(LOG, headers=auth(ls.client_admin))).status_code == 401
        assert (await client.get(LOG, headers=auth(ls.client_member))).status_code == 401
        events = (await session.execute(select(UserActionEvent))).scalars().all()
        assert [(e.body["action_type"], e.body["api_group"]) for e in events] == [
            ("delete", "client")
        ]

    async def test_no_mail_when_no_enabled_address(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        r = await client.delete(f"/iam/clients/{ls.client_account.id}", headers=auth(ls.reseller))
        assert r.status_code == 204
        assert (await session.execute(select(MailMessage))).scalars().all() == []

    async def test_member_is_forbidden_and_nothing_changes(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.delete(
            f"/iam/clients/{ls.client_account.id}", headers=auth(ls.client_member)
        )
        assert r.status_code == 403
        assert (await client.get(LOG, headers=auth(ls.client_admin))).status_code == 200

    async def test_other_tenant_is_404(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.delete(
            f"/iam/clients/{ls.client_account.id}", headers=auth(ls.other_reseller)
        )
        assert r.status_code == 404

    async def test_reseller_cannot_delete_itself(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.delete(f"/iam/clients/{ls.reseller_account.id}", headers=auth(ls.reseller))
        assert r.status_code == 403
