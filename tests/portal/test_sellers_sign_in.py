"""Sellers sign in to the Admin Portal (docs/access.md, "The Admin Portal: sellers"):
the invitation's set-password link (24 hours, single use, of the seller kind), the
seller's session and Caller, what a seller sees (its assigned clients only) and may
change (nothing), and the refusals of a blocked, deleted or not yet activated seller,
over HTTP on both databases."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Actor, CallerKind
from cloudadmin.billing.addendums import filters as addendum_filters
from cloudadmin.db.models import (
    ActivityLogEntry,
    Branding,
    Client,
    MailMessage,
    PortalSession,
    Seller,
)
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound, PermissionDenied
from cloudadmin.iam.clients import reads
from cloudadmin.iam.clients import service as clients
from cloudadmin.iam.clients.query import ClientListQuery
from cloudadmin.iam.clients.schemas import ClientPatch
from cloudadmin.iam.sellers import access
from cloudadmin.iam.sign_in.credentials import (
    PortalKind,
    PortalUser,
    caller_of,
    check_password,
)
from cloudadmin.iam.users import manage as users_manage
from cloudadmin.kit.crypto import verify_password
from cloudadmin.kit.pagination import Paging
from cloudadmin.web.app_state import app_state
from tests.portal.crawl import routes_with
from tests.portal.people import PASSWORD, People, sign_in, token_of

WRONG = "The e-mail address or the password is wrong."
NEW_PASSWORD = "Quiet-Meadow-Copper-71"


async def mail_server(session: AsyncSession, reseller_id: int, port: int = 2525) -> None:
    """The reseller's branding names a mail server: its mails can be sent."""
    session.add(
        Branding(
            reseller_id=reseller_id,
            domain="",
            public_settings={"brandName": "Acme Cloud"},
            mail_server={"host": "127.0.0.1", "port": str(port), "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    await session.commit()


async def link_mailed_to(app: FastAPI, session: AsyncSession, email: str) -> str:
    """The set-password link of the newest mail to ``email``, an invitation or a password
    reset (their bodies are sealed)."""
    session.expire_all()
    rows = (
        await session.execute(
            select(MailMessage)
            .where(MailMessage.kind.in_(["invitation", "password_reset"]))
            .order_by(MailMessage.id)
        )
    ).scalars()
    mine = [row.body for row in rows if row.recipients == [email]]
    await session.rollback()
    assert mine, f"no mail to {email}"
    body = app_state(app).secret_box.decrypt(mine[-1])
    found = re.search(r"https?://\S+", body)
    assert found, body
    return found.group(0)


def token_in(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]


async def set_password(
    client: httpx.AsyncClient, token: str, password: str, again: str | None = None
) -> httpx.Response:
    form = await client.get("/portal/set-password", params={"token": token})
    assert form.status_code == 200, form.text
    return await client.post(
        "/portal/set-password",
        data={
            "csrf_token": token_of(form.text),
            "token": token,
            "password": password,
            "password_again": password if again is None else again,
        },
    )


async def seller_row(session: AsyncSession, seller_id: int) -> Seller:
    session.expire_all()
    row = await session.get(Seller, seller_id)
    assert row is not None
    session.expunge(row)
    await session.rollback()
    return row


async def refused_sign_in(client: httpx.AsyncClient, email: str, password: str) -> None:
    form = await client.get("/portal/sign-in")
    r = await client.post(
        "/portal/sign-in",
        data={"email": email, "password": password, "csrf_token": token_of(form.text)},
    )
    assert r.status_code == 401, r.text
    assert WRONG in r.text


class TestSigningIn:
    async def test_a_seller_signs_in_and_its_session_names_the_seller(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["seller"])
        home = await client.get("/portal/")
        assert home.status_code == 200
        assert f"{people.emails['seller']} (seller)" in home.text
        rows = [
            (r.user_id, r.seller_id)
            for r in (await session.execute(select(PortalSession))).scalars()
        ]
        await session.rollback()
        assert rows == [(None, people.seller_id)]
        # The sign-in is in the activity log, as the seller's, on its reseller's account.
        logged = (
            await session.execute(
                select(ActivityLogEntry).where(ActivityLogEntry.actions == "portal.sign_in")
            )
        ).scalar_one()
        assert (logged.user_email, logged.client_id, logged.user_id) == (
            people.emails["seller"],
            people.reseller_id,
            0,
        )

    @pytest.mark.parametrize("state", ["blocked", "deleted", "no_password", "not_activated"])
    async def test_a_seller_who_may_not_sign_in_looks_like_a_wrong_password(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People, state: str
    ):
        values = {
            "blocked": {"blocked": True},
            "deleted": {"deleted": True},
            "no_password": {"password_hash": None},
            "not_activated": {"activated": False},
        }[state]
        await session.execute(update(Seller).where(Seller.id == people.seller_id).values(values))
        await session.commit()
        await refused_sign_in(client, people.emails["seller"], PASSWORD)

    async def test_a_wrong_password_of_a_seller_is_refused(
        self, client: httpx.AsyncClient, people: People
    ):
        await refused_sign_in(client, people.emails["seller"], "not the password")
        await refused_sign_in(client, people.emails["seller"].upper(), "not the password")

    async def test_a_seller_of_a_deleted_reseller_may_not_sign_in(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await session.execute(
            update(Client).where(Client.id == people.reseller_id).values(deleted=True)
        )
        await session.commit()
        await refused_sign_in(client, people.emails["seller"], PASSWORD)

    async def test_blocking_ends_the_sellers_session(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["seller"])
        await session.execute(
            update(Seller).where(Seller.id == people.seller_id).values(blocked=True)
        )
        await session.commit()
        r = await client.get("/portal/")
        assert r.status_code == 303
        assert r.headers["location"] == "/portal/sign-in"

    async def test_a_session_names_exactly_one_person(self, session: AsyncSession, people: People):
        now = utcnow()
        for user_id, seller_id in [(None, None), (people.user_ids["reseller"], people.seller_id)]:
            session.add(
                PortalSession(
                    id_hash=f"{user_id}-{seller_id}".ljust(64, "x"),
                    user_id=user_id,
                    seller_id=seller_id,
                    csrf_token="t",
                    created_at=now,
                    last_seen_at=now,
                )
            )
            with pytest.raises(IntegrityError):
                await session.flush()
            await session.rollback()


class TestWhatASellerSees:
    async def _seller(self, session: AsyncSession, people: People) -> PortalUser:
        user = await check_password(session, people.emails["seller"], PASSWORD)
        assert isinstance(user, PortalUser)
        assert (user.kind, user.seller_id, user.principal) == (
            PortalKind.seller,
            people.seller_id,
            f"seller:{people.seller_id}",
        )
        return user

    async def test_only_its_assigned_clients(self, session: AsyncSession, people: People):
        caller = await caller_of(session, await self._seller(session, people))
        assert caller.kind is CallerKind.seller
        assert (caller.account_id, caller.seller_id) == (people.reseller_id, people.seller_id)
        listed = await reads.list_clients(
            session, caller, ClientListQuery(), url=httpx.URL("http://t/iam/clients")
        )
        assert isinstance(listed, list)
        assert [c.id for c in listed] == [people.client_id]
        assert (await reads.get(session, caller, people.client_id)).id == people.client_id
        # Neither its reseller's own account nor another reseller's client.
        for other in (people.reseller_id, people.other_client_id, people.other_reseller_id):
            with pytest.raises(NotFound):
                await reads.get(session, caller, other)

    async def test_a_seller_changes_nothing(self, session: AsyncSession, people: People):
        caller = await caller_of(session, await self._seller(session, people))
        actor = Actor(caller=caller, source_ip="", user_agent="", request_id="")
        with pytest.raises(PermissionDenied):
            await clients.update(
                session, actor, people.client_id, ClientPatch.model_validate({"name": "x"})
            )
        with pytest.raises(PermissionDenied):
            await clients.request_deletion(session, actor, people.client_id)

    async def test_reads_scoped_for_accounts_refuse_a_seller(
        self, session: AsyncSession, people: People
    ):
        """The addendum list and the own-account users list are written for accounts:
        a seller (whose account is its reseller's) is refused rather than shown its
        reseller's rows."""
        caller = await caller_of(session, await self._seller(session, people))
        with pytest.raises(PermissionDenied):
            addendum_filters.Scope.of(caller)
        with pytest.raises(PermissionDenied):
            await users_manage.list_users(
                session, caller, Paging(limit=10, offset=0), URL("http://t/")
            )

    async def test_the_users_section_is_not_a_sellers(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["seller"])
        for path in ("/portal/users", "/portal/users/sellers", "/portal/users/1"):
            r = await client.get(path)
            assert r.status_code == 404, path
        home = await client.get("/portal/")
        assert 'href="/portal/users"' not in home.text


class TestTheInvitation:
    async def _invited(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ) -> tuple[int, str]:
        """A reseller adds a seller in the portal; the seller's id and its mailed link."""
        await mail_server(session, people.reseller_id)
        csrf = await sign_in(client, people.emails["reseller"])
        r = await client.post(
            "/portal/users/sellers/new",
            data={"csrf_token": csrf, "full_name": "Nora New", "email": "nora@example.com"},
        )
        assert r.status_code == 303, r.text
        client.cookies.clear()
        seller = (
            await session.execute(select(Seller).where(Seller.email == "nora@example.com"))
        ).scalar_one()
        session.expunge(seller)
        await session.rollback()
        assert (seller.activated, seller.password_hash, seller.blocked) == (False, None, False)
        assert seller.invited_at is not None
        return seller.id, await link_mailed_to(app, session, "nora@example.com")

    async def test_the_link_sets_the_password_once_and_activates_the_seller(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        seller_id, link = await self._invited(app, client, session, people)
        assert urlsplit(link).path == "/portal/set-password"
        token = token_in(link)
        assert token.startswith("s")
        # Two different passwords, then a weak one: the form again, nothing set.
        r = await set_password(client, token, NEW_PASSWORD, again="something else")
        assert r.status_code == 400
        assert "The two passwords differ." in r.text
        assert NEW_PASSWORD not in r.text
        r = await set_password(client, token, "12345678")
        assert r.status_code == 400
        assert "too common" in unescape(r.text)
        assert (await seller_row(session, seller_id)).password_hash is None
        r = await set_password(client, token, NEW_PASSWORD)
        assert r.status_code == 303
        assert r.headers["location"] == "/portal/set-password/done"
        row = await seller_row(session, seller_id)
        assert row.activated
        assert verify_password(row.password_hash or "", NEW_PASSWORD)
        # In the activity log as the seller's, the link's token and the passwords masked.
        logged = (
            await session.execute(
                select(ActivityLogEntry.user_email, ActivityLogEntry.data).where(
                    ActivityLogEntry.actions == "portal.set_seller_password"
                )
            )
        ).one()
        await session.rollback()
        assert logged.user_email == "nora@example.com"
        assert token not in logged.data and NEW_PASSWORD not in logged.data
        await sign_in(client, "nora@example.com", NEW_PASSWORD)
        client.cookies.clear()
        # Used up: the link no longer works.
        again = await client.get("/portal/set-password", params={"token": token})
        assert again.status_code == 400
        assert "not valid, or it was used already" in again.text

    async def test_a_seller_token_is_no_users_token_and_back(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        _, link = await self._invited(app, client, session, people)
        token = token_in(link)
        r = await client.post(
            "/iam/auth/set-password", json={"token": token, "password": NEW_PASSWORD}
        )
        assert r.status_code == 400
        # A user's token of the same id and time is refused by the sellers' page.
        users_token = token[1:]
        r = await client.get("/portal/set-password", params={"token": users_token})
        assert r.status_code == 400

    async def test_an_expired_link_and_a_blocked_seller_are_refused(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        keys = tuple(app_state(app).settings.secret_keys())
        seller = await seller_row(session, people.seller_id)
        old = access.seller_tokens(keys).make(seller, now=utcnow() - timedelta(hours=25))
        r = await client.get("/portal/set-password", params={"token": old})
        assert r.status_code == 400
        assert "expired" in r.text
        fresh = access.seller_tokens(keys).make(seller)
        await session.execute(
            update(Seller).where(Seller.id == people.seller_id).values(blocked=True)
        )
        await session.commit()
        r = await client.get("/portal/set-password", params={"token": fresh})
        assert r.status_code == 400

    async def test_the_form_needs_its_own_token(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        seller_id, link = await self._invited(app, client, session, people)
        r = await client.post(
            "/portal/set-password",
            data={
                "csrf_token": "forged",
                "token": token_in(link),
                "password": NEW_PASSWORD,
                "password_again": NEW_PASSWORD,
            },
        )
        assert r.status_code == 403
        assert (await seller_row(session, seller_id)).password_hash is None


class TestEveryPage:
    async def test_no_portal_page_fails_a_seller(
        self, app: FastAPI, client: httpx.AsyncClient, people: People
    ):
        """Every page without a path parameter, as a seller: its own (200), or refused
        (403/404), never a 500; none shows the reseller's own users."""
        paths = sorted(
            r.path for r in routes_with(app, "GET") if "{" not in r.path and r.path != "/portal"
        )
        assert "/portal/accounts" in paths and "/portal/users" in paths
        await sign_in(client, people.emails["seller"])
        for path in paths:
            r = await client.get(path)
            assert r.status_code < 500, (path, r.status_code)
            assert people.emails["reseller"] not in r.text, path
