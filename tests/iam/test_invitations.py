"""Invitations: POST /iam/clients/invite_user mails a set-password link through the
reseller's mail server (a real SMTP server: aiosmtpd), and POST /iam/auth/set-password
takes its token once, within 24 hours (docs/iam.md, "Invitations")."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from aiosmtpd.controller import Controller
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import Branding, MailMessage, User
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.kit.crypto import verify_password
from cloudadmin.web.app_state import app_state
from tests.factories import Landscape, auth, landscape, make_client, make_user
from tests.iam.accounts_helpers import STRONG_PASSWORD, fresh
from tests.races import in_order

INVITE = "/iam/clients/invite_user"
SET_PASSWORD = "/iam/auth/set-password"
ENGINEERS = {"id": 5, "name": "Engineers"}
NEW_PASSWORD = "Bright-Harbour-Lantern-42"


@dataclass
class Mailbox:
    messages: list[EmailMessage] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        parsed = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        self.messages.append(parsed)
        return "250 OK"


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    # A few refused tokens from one address are then throttled (TestThrottle).
    update: dict[str, object] = {"auth_failure_limit": "5/minute"}
    # A test parametrized indirectly on "settings" gives more.
    update.update(getattr(request, "param", None) or {})
    return settings.model_copy(update=update)


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


@pytest.fixture
async def dispatcher(app: FastAPI) -> AsyncIterator[Dispatcher]:
    d = Dispatcher(
        app_state(app).engine,
        app_state(app).secret_box,
        lanes=2,
        poll_seconds=0.05,
        outbound=app_state(app).outbound,
    )
    yield d
    await d.webhooks.close()
    await d.brokers.close()


@pytest.fixture
async def ls(session: AsyncSession, smtp: tuple[Mailbox, int]) -> Landscape:
    """The landscape; its reseller's branding names a panel domain and the mail server."""
    ls = await landscape(session)
    session.add(
        Branding(
            reseller_id=ls.reseller_account.id,
            domain="panel.acme.example",
            public_settings={"fromEmail": "noreply@acme.example", "brandName": "Acme Cloud"},
            mail_server={"host": "127.0.0.1", "port": str(smtp[1]), "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    await session.commit()
    return ls


def invitation(client_id: int, **over: object) -> dict[str, object]:
    return {
        "email": "new.hire@shop.example",
        "user_role": ENGINEERS,
        "client_id": client_id,
        **over,
    }


async def send_all(dispatcher: Dispatcher) -> None:
    while await dispatcher.send_mail_once():
        pass


def link_of(mail: EmailMessage) -> str:
    body = mail.get_body()
    assert body is not None
    [line] = [x for x in body.get_content().splitlines() if "/set-password?token=" in x]
    return line.strip()


def token_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]


async def invite_and_mail(
    client: httpx.AsyncClient, ls: Landscape, mailbox: Mailbox, dispatcher: Dispatcher
) -> tuple[int, str]:
    r = await client.post(
        INVITE, json=invitation(ls.client_account.id), headers=auth(ls.client_admin)
    )
    assert r.status_code == 200, r.text
    await send_all(dispatcher)
    return int(r.json()["user_id"]), token_of(link_of(mailbox.messages[-1]))


class TestInvite:
    async def test_the_user_gets_a_link_that_sets_its_password_once(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox = smtp[0]
        body = invitation(ls.client_account.id, name="New Hire", lang="de")
        r = await client.post(INVITE, json=body, headers=auth(ls.client_admin))
        assert r.status_code == 200, r.text
        user_id = r.json()["user_id"]
        assert r.json() == {"status": "sent", "user_id": user_id}
        user = await fresh(session, User, user_id)
        assert (user.client_id, user.name, user.lang, user.group_ids) == (
            ls.client_account.id,
            "New Hire",
            "de",
            {5},
        )
        assert user.activated is False and user.password_hash is None
        # The outbox holds the mail encrypted: no usable link in the table.
        [queued] = (await session.execute(select(MailMessage))).scalars().all()
        await session.commit()
        assert (queued.kind, queued.recipients) == ("invitation", ["new.hire@shop.example"])
        assert "set-password" not in queued.body

        await send_all(dispatcher)
        [mail] = mailbox.messages
        assert mail["To"] == "new.hire@shop.example"
        assert mail["From"] == "noreply@acme.example"
        assert "Acme Cloud" in mail["Subject"]
        link = link_of(mail)
        assert link.startswith("https://panel.acme.example/set-password?token=")
        token = token_of(link)

        r = await client.post(SET_PASSWORD, json={"token": token, "password": NEW_PASSWORD})
        assert r.status_code == 204, r.text
        user = await fresh(session, User, user_id)
        assert user.activated is True
        assert user.password_hash and verify_password(user.password_hash, NEW_PASSWORD)

        again = await client.post(SET_PASSWORD, json={"token": token, "password": STRONG_PASSWORD})
        assert again.status_code == 400, again.text
        assert list(again.json()["errors"]) == ["token"]
        user = await fresh(session, User, user_id)
        assert verify_password(str(user.password_hash), NEW_PASSWORD)

    async def test_a_reseller_and_an_operator_invite_too(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        for n, key in enumerate((ls.reseller, ls.operator)):
            body = invitation(ls.client_account.id, email=f"r{n}@shop.example")
            r = await client.post(INVITE, json=body, headers=auth(key))
            assert r.status_code == 200, r.text

    async def test_invite_into_another_tenant_is_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        for cid in (ls.client_account.id, 2_000_000_000):
            r = await client.post(INVITE, json=invitation(cid), headers=auth(ls.other_reseller))
            assert r.status_code == 404, r.text
            assert r.json()["message"] == "Account not found."
        other = await make_client(session, reseller_id=ls.other_reseller_account.id)
        await session.commit()
        r = await client.post(INVITE, json=invitation(other.id), headers=auth(ls.client_admin))
        assert r.status_code == 404
        assert (await session.execute(select(MailMessage))).scalars().all() == []
        await session.commit()

    async def test_a_member_is_403(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            INVITE, json=invitation(ls.client_account.id), headers=auth(ls.client_member)
        )
        assert r.status_code == 403, r.text

    @pytest.mark.parametrize(
        ("over", "field_name"),
        [
            ({"email": "not-an-address"}, "email"),
            ({"email": None}, "email"),
            ({"user_role": {}}, "user_role"),
            ({"user_role": {"id": 100}}, "user_role"),
            ({"user_role": {"id": 1, "name": "Users"}}, "user_role"),
            ({"user_role": "Engineers"}, "user_role"),
            ({"client_id": "x"}, "client_id"),
            ({"lang": "fr"}, "lang"),
            ({"name": "x" * 256}, "name"),
        ],
    )
    async def test_a_bad_body_is_400_naming_the_field(
        self, client: httpx.AsyncClient, ls: Landscape, over: dict[str, object], field_name: str
    ):
        body = {**invitation(ls.client_account.id), **over}
        r = await client.post(INVITE, json=body, headers=auth(ls.client_admin))
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == [field_name], r.text

    async def test_a_missing_field_is_400_naming_it(self, client: httpx.AsyncClient, ls: Landscape):
        for name in ("email", "user_role", "client_id"):
            body = invitation(ls.client_account.id)
            del body[name]
            r = await client.post(INVITE, json=body, headers=auth(ls.client_admin))
            assert r.status_code == 400 and list(r.json()["errors"]) == [name], r.text

    async def test_existing_users(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        cid = ls.client_account.id
        admin = auth(ls.client_admin)
        member = ls.member_user
        r = await client.post(INVITE, json=invitation(cid, email=member.email), headers=admin)
        assert r.status_code == 400
        assert r.json()["errors"] == {
            "email": [f"User {member.id} has already been invited to client {cid}"]
        }
        elsewhere = await make_user(session, ls.other_reseller_account)
        await session.commit()
        r = await client.post(
            INVITE, json=invitation(cid, email=elsewhere.email.upper()), headers=admin
        )
        assert r.status_code == 400
        assert r.json()["errors"] == {"email": ["This user cannot be added to this client."]}
        # Invited, no password yet: inviting again mails a new link to the same user.
        user_id, first = await invite_and_mail(client, ls, smtp[0], dispatcher)
        again_id, second = await invite_and_mail(client, ls, smtp[0], dispatcher)
        assert again_id == user_id and len(smtp[0].messages) == 2
        r = await client.post(SET_PASSWORD, json={"token": second, "password": NEW_PASSWORD})
        assert r.status_code == 204, r.text
        # The first link is void now too (the password changed), and the user is in.
        r = await client.post(SET_PASSWORD, json={"token": first, "password": NEW_PASSWORD})
        assert r.status_code == 400
        r = await client.post(INVITE, json=invitation(cid), headers=admin)
        assert r.status_code == 400 and "already been invited" in r.text

    async def test_an_account_whose_reseller_has_no_mail_server_is_400(
        self, client: httpx.AsyncClient, session: AsyncSession, ls: Landscape
    ):
        await session.execute(update(Branding).values(mail_server={}))
        await session.commit()
        r = await client.post(
            INVITE, json=invitation(ls.client_account.id), headers=auth(ls.client_admin)
        )
        assert r.status_code == 400 and list(r.json()["errors"]) == ["client_id"], r.text
        assert (await session.execute(select(User).where(User.email.like("new.hire%")))).all() == []
        await session.commit()

    async def test_without_a_branding_domain_the_link_goes_to_the_request_address(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        await session.execute(update(Branding).values(domain=""))
        await session.commit()
        await invite_and_mail(client, ls, smtp[0], dispatcher)
        assert link_of(smtp[0].messages[-1]).startswith("http://testserver/set-password?token=")

    @pytest.mark.parametrize(
        "settings", [{"public_base_url": "https://cloud.example/panel/"}], indirect=True
    )
    async def test_without_a_branding_domain_the_link_uses_public_base_url(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        await session.execute(update(Branding).values(domain=""))
        await session.commit()
        await invite_and_mail(client, ls, smtp[0], dispatcher)
        link = link_of(smtp[0].messages[-1])
        assert link.startswith("https://cloud.example/panel/set-password?token=")


class TestSetPassword:
    async def test_an_expired_token_is_refused(
        self,
        client: httpx.AsyncClient,
        settings: Settings,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        user_id, _ = await invite_and_mail(client, ls, smtp[0], dispatcher)
        user = await fresh(session, User, user_id)
        tokens = SetPasswordTokens(settings.resolved_secret_key())
        old = tokens.make(user, now=utcnow() - timedelta(hours=25))
        r = await client.post(SET_PASSWORD, json={"token": old, "password": NEW_PASSWORD})
        assert r.status_code == 400, r.text
        assert r.json()["errors"] == {"token": ["This link has expired; ask for a new invitation."]}
        # Within the 24 hours the same kind of token works.
        recent = tokens.make(user, now=utcnow() - timedelta(hours=23))
        r = await client.post(SET_PASSWORD, json={"token": recent, "password": NEW_PASSWORD})
        assert r.status_code == 204, r.text

    async def test_a_weak_password_is_400_and_leaves_the_token_usable(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        _, token = await invite_and_mail(client, ls, smtp[0], dispatcher)
        r = await client.post(SET_PASSWORD, json={"token": token, "password": "password"})
        assert r.status_code == 400 and list(r.json()["errors"]) == ["password"], r.text
        r = await client.post(SET_PASSWORD, json={"token": token, "password": NEW_PASSWORD})
        assert r.status_code == 204, r.text

    @pytest.mark.parametrize(
        "token",
        ["", "garbage", "1-abc-" + "A" * 43, "12-zzzzzz-" + "x" * 43, "x" * 101],
    )
    async def test_a_malformed_or_forged_token_is_400_naming_token(
        self, client: httpx.AsyncClient, ls: Landscape, token: str
    ):
        r = await client.post(SET_PASSWORD, json={"token": token, "password": NEW_PASSWORD})
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == ["token"]

    async def test_a_token_of_a_deleted_user_or_under_another_key_is_refused(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        user_id, token = await invite_and_mail(client, ls, smtp[0], dispatcher)
        user = await fresh(session, User, user_id)
        forged = SetPasswordTokens("another-secret-key").make(user)
        r = await client.post(SET_PASSWORD, json={"token": forged, "password": NEW_PASSWORD})
        assert r.status_code == 400 and list(r.json()["errors"]) == ["token"]
        await session.execute(update(User).where(User.id == user_id).values(deleted=True))
        await session.commit()
        r = await client.post(SET_PASSWORD, json={"token": token, "password": NEW_PASSWORD})
        assert r.status_code == 400 and list(r.json()["errors"]) == ["token"]

    async def test_needs_no_api_key_and_is_not_in_the_activity_log(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        _, token = await invite_and_mail(client, ls, smtp[0], dispatcher)
        r = await client.post(
            SET_PASSWORD,
            json={"token": token, "password": NEW_PASSWORD},
            headers={"Authorization": "APIKey 1_wrong"},
        )
        assert r.status_code == 204, r.text
        log = await client.get("/iam/activity_log/requests", headers=auth(ls.operator))
        assert "set-password" not in log.text and NEW_PASSWORD not in log.text


class TestRace:
    async def test_two_uses_of_one_token_at_once_set_one_password(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        user_id, token = await invite_and_mail(client, ls, smtp[0], dispatcher)
        first, second = await in_order(
            app,
            session,
            User,
            user_id,
            client.post(SET_PASSWORD, json={"token": token, "password": NEW_PASSWORD}),
            client.post(SET_PASSWORD, json={"token": token, "password": STRONG_PASSWORD}),
        )
        assert sorted([first.status_code, second.status_code]) == [204, 400]
        won = NEW_PASSWORD if first.status_code == 204 else STRONG_PASSWORD
        user = await fresh(session, User, user_id)
        assert verify_password(str(user.password_hash), won)


class TestKeyRotation:
    @pytest.mark.parametrize(
        "settings", [{"secret_keys_old": [SecretStr("a-retired-key")]}], indirect=True
    )
    async def test_a_link_signed_under_a_previous_key_still_works(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        smtp: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        user_id, _ = await invite_and_mail(client, ls, smtp[0], dispatcher)
        user = await fresh(session, User, user_id)
        unknown = SetPasswordTokens("never-configured").make(user)
        r = await client.post(SET_PASSWORD, json={"token": unknown, "password": NEW_PASSWORD})
        assert r.status_code == 400
        old = SetPasswordTokens("a-retired-key").make(user)
        r = await client.post(SET_PASSWORD, json={"token": old, "password": NEW_PASSWORD})
        assert r.status_code == 204, r.text


class TestThrottle:
    async def test_refused_tokens_from_one_address_are_throttled(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        bad = {"token": "1-abc-" + "A" * 43, "password": NEW_PASSWORD}
        statuses = [(await client.post(SET_PASSWORD, json=bad)).status_code for _ in range(7)]
        assert statuses[:5] == [400] * 5 and statuses[-1] == 429, statuses
