"""docs/portal.md: sign-in, sessions, CSRF and the security headers of the Admin Portal,
over plain HTTP against the application, on both databases."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import MailMessage, NotificationSetting, PortalSession, User
from cloudadmin.db.types import utcnow
from cloudadmin.iam.sign_in import sessions
from cloudadmin.kit.crypto import hash_password
from cloudadmin.web.app_state import app_state
from tests.factories import make_client, make_reseller, make_user

PASSWORD = "correct horse battery"
TRUSTED_PROXY = "10.0.0.1"


def transport_client(app: Any, address: str = "203.0.113.7") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


@pytest.fixture
async def people(session: AsyncSession) -> dict[str, str]:
    """An operator, a reseller's user, a client's user, an inactive and a deleted user,
    by e-mail."""
    hashed = hash_password(PASSWORD)
    operator_account = await make_client(session)
    reseller = await make_reseller(session)
    client = await make_client(session, reseller_id=reseller.id)
    operator = await make_user(session, operator_account, superuser=True, password_hash=hashed)
    reseller_user = await make_user(session, reseller, password_hash=hashed)
    client_user = await make_user(session, client, password_hash=hashed)
    inactive = await make_user(session, reseller, password_hash=hashed, is_active=False)
    deleted = await make_user(session, reseller, password_hash=hashed, deleted=True)
    await session.commit()
    return {
        "operator": operator.email,
        "reseller": reseller_user.email,
        "client": client_user.email,
        "inactive": inactive.email,
        "deleted": deleted.email,
    }


def token_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


async def sign_in(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    form = await client.get("/portal/sign-in")
    assert form.status_code == 200
    return await client.post(
        "/portal/sign-in",
        data={"email": email, "password": password, "csrf_token": token_of(form.text)},
    )


async def session_rows(session: AsyncSession) -> list[PortalSession]:
    """The rows as they are now; the read's transaction ends (on SQLite it holds the
    write lock the app's requests need)."""
    session.expire_all()
    rows = list((await session.execute(select(PortalSession))).scalars())
    session.expunge_all()
    await session.rollback()
    return rows


class TestSignIn:
    async def test_an_operator_signs_in_and_sees_the_navigation(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        r = await sign_in(client, people["operator"])
        assert r.status_code == 303 and r.headers["location"] == "/portal/"
        home = await client.get("/portal/")
        assert home.status_code == 200
        assert 'aria-label="Main"' in home.text and "operator" in home.text
        assert "Sign out" in home.text and 'href="/portal/accounts"' in home.text
        assert "/portal/vendor" not in home.text  # a reseller's section
        # Only the hash of the cookie's id is stored.
        [row] = await session_rows(session)
        assert client.cookies["portal_session"] not in (row.id_hash, row.csrf_token)

    async def test_a_reseller_signs_in(self, client: httpx.AsyncClient, people: dict[str, str]):
        assert (await sign_in(client, people["reseller"])).status_code == 303
        home = await client.get("/portal/")
        assert "reseller" in home.text and 'href="/portal/vendor"' in home.text

    async def test_a_wrong_password_an_unknown_address_and_inactive_or_deleted_users_look_alike(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        answers = [
            await sign_in(client, people["operator"], "wrong password"),
            await sign_in(client, "nobody@example.com"),
            await sign_in(client, people["inactive"]),
            await sign_in(client, people["deleted"]),
        ]
        assert {a.status_code for a in answers} == {401}
        texts = {
            re.sub(r'value="[^"]*"', "", a.text) for a in answers
        }  # the token and the typed e-mail differ
        assert len(texts) == 1
        assert "The e-mail address or the password is wrong." in answers[0].text
        assert await session_rows(session) == []
        assert (await client.get("/portal/")).status_code == 303

    async def test_what_was_typed_is_shown_escaped(self, client: httpx.AsyncClient):
        typed = '"><script src="/x.js"></script>@example.com'
        r = await sign_in(client, typed, "wrong password")
        assert r.status_code == 401
        assert '<script src="/x.js">' not in r.text
        assert (
            'value="&#34;&gt;&lt;script src=&#34;/x.js&#34;&gt;&lt;/script&gt;@example.com"'
            in r.text
        )

    async def test_past_the_failure_limit_the_address_gets_the_429_page(
        self, app: FastAPI, settings: Settings, people: dict[str, str]
    ):
        limited = create_app(settings.model_copy(update={"auth_failure_limit": "2/minute"}))
        try:
            async with transport_client(limited) as c:
                for _ in range(2):
                    assert (await sign_in(c, people["operator"], "wrong")).status_code == 401
                r = await sign_in(c, people["operator"])  # even the right password
                assert r.status_code == 429
                assert int(r.headers["retry-after"]) >= 1
                assert "Too many" in r.text
                assert r.headers["content-security-policy"].startswith("default-src 'self'")
        finally:
            await app_state(limited).throttle.close()
            await app_state(limited).engine.dispose()

    async def test_a_client_user_gets_the_not_here_page(
        self, client: httpx.AsyncClient, people: dict[str, str]
    ):
        assert (await sign_in(client, people["client"])).status_code == 303
        r = await client.get("/portal/")
        assert r.status_code == 403
        assert "not part of the Admin Portal" in r.text
        assert 'href="/portal/accounts"' not in r.text

    async def test_a_sign_in_form_without_its_token_is_refused(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        await client.get("/portal/sign-in")
        r = await client.post(
            "/portal/sign-in",
            data={"email": people["operator"], "password": PASSWORD, "csrf_token": "forged"},
        )
        assert r.status_code == 403
        assert await session_rows(session) == []


class TestFailedSignInMail:
    async def test_a_wrong_password_mails_the_reseller_once_per_interval(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        user_id, account_id = (
            await session.execute(
                select(User.id, User.client_id).where(User.email == people["reseller"])
            )
        ).one()
        session.add(
            NotificationSetting(
                reseller_id=account_id,
                notification_type="failed_login",
                email="security@reseller.example",
            )
        )
        await session.commit()
        await sign_in(client, "nobody@example.com", "wrong")  # no one to tell
        for _ in range(2):
            assert (await sign_in(client, people["reseller"], "wrong")).status_code == 401
        mails = list((await session.execute(select(MailMessage))).scalars())
        session.expunge_all()
        await session.rollback()
        assert [(m.kind, m.recipients, m.reseller_id) for m in mails] == [
            ("failed_login", ["security@reseller.example"], account_id)
        ]
        assert f"as user {user_id} of account {account_id}" in mails[0].body
        assert "203.0.113.7" in mails[0].body


class TestSessions:
    async def test_sign_out_ends_the_session(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        await sign_in(client, people["operator"])
        home = await client.get("/portal/")
        r = await client.post("/portal/sign-out", data={"csrf_token": token_of(home.text)})
        assert r.status_code == 303
        assert await session_rows(session) == []
        assert (await client.get("/portal/")).status_code == 303

    async def test_htmx_sends_the_token_as_a_header(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        await sign_in(client, people["operator"])
        token = token_of((await client.get("/portal/")).text)
        r = await client.post("/portal/sign-out", headers={"X-CSRF-Token": token})
        assert r.status_code == 303
        assert await session_rows(session) == []

    @pytest.mark.parametrize("token", [None, "forged"])
    async def test_a_post_without_a_valid_token_is_403_and_writes_nothing(
        self,
        client: httpx.AsyncClient,
        people: dict[str, str],
        session: AsyncSession,
        token: str | None,
    ):
        await sign_in(client, people["operator"])
        await client.get("/portal/")
        before = [(r.id_hash, r.last_seen_at) for r in await session_rows(session)]
        r = await client.post("/portal/sign-out", data={"csrf_token": token} if token else {})
        assert r.status_code == 403
        assert [(r.id_hash, r.last_seen_at) for r in await session_rows(session)] == before
        assert (await client.get("/portal/")).status_code == 200

    @pytest.mark.parametrize(
        ("column", "age"),
        [("last_seen_at", timedelta(minutes=31)), ("created_at", timedelta(hours=13))],
    )
    async def test_an_idle_or_too_old_session_has_ended(
        self,
        client: httpx.AsyncClient,
        people: dict[str, str],
        session: AsyncSession,
        column: str,
        age: timedelta,
    ):
        # The defaults: 30 minutes idle, 12 hours in all.
        await sign_in(client, people["operator"])
        assert (await client.get("/portal/")).status_code == 200
        await session.execute(update(PortalSession).values({column: utcnow() - age}))
        await session.commit()
        r = await client.get("/portal/")
        assert r.status_code == 303 and r.headers["location"] == "/portal/sign-in"
        assert await session_rows(session) == []

    async def test_a_session_in_use_lives_past_the_idle_timeout(
        self, client: httpx.AsyncClient, people: dict[str, str], session: AsyncSession
    ):
        await sign_in(client, people["operator"])
        await session.execute(
            update(PortalSession).values(
                created_at=utcnow() - timedelta(hours=2),
                last_seen_at=utcnow() - timedelta(minutes=29),
            )
        )
        await session.commit()
        assert (await client.get("/portal/")).status_code == 200

    async def test_end_other_sessions_keeps_only_the_one_named(
        self, app: FastAPI, people: dict[str, str], session: AsyncSession
    ):
        kept = []
        for _ in range(3):
            async with transport_client(app) as c:
                await sign_in(c, people["operator"])
                kept.append(c.cookies["portal_session"])
        async with transport_client(app) as other:
            await sign_in(other, people["reseller"])
        operator = (
            await session.execute(select(User.id).where(User.email == people["operator"]))
        ).scalar_one()
        assert await sessions.end_other_sessions(session, operator, keep=kept[0]) == 2
        await session.commit()
        rows = await session_rows(session)
        assert len(rows) == 2 and sum(r.user_id == operator for r in rows) == 1
        async with transport_client(app) as c:
            c.cookies.set("portal_session", kept[0], path="/portal")
            assert (await c.get("/portal/")).status_code == 200
            c.cookies.set("portal_session", kept[1], path="/portal")
            assert (await c.get("/portal/")).status_code == 303
        assert await sessions.end_other_sessions(session, operator, keep=None) == 1


class TestCookiesAndHeaders:
    async def test_the_cookie_is_httponly_and_lax_and_not_secure_over_http(
        self, client: httpx.AsyncClient, people: dict[str, str]
    ):
        r = await sign_in(client, people["operator"])
        cookie = r.headers["set-cookie"].lower()
        assert "portal_session=" in cookie
        assert "httponly" in cookie and "samesite=lax" in cookie and "path=/portal" in cookie
        assert "secure" not in cookie

    async def test_over_https_the_cookie_is_secure(self, app: FastAPI, people: dict[str, str]):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("203.0.113.7", 40000)),
            base_url="https://testserver",
        ) as c:
            r = await sign_in(c, people["operator"])
        assert "secure" in r.headers["set-cookie"].lower()

    async def test_through_the_trusted_proxy_https_makes_it_secure(self, settings: Settings):
        # The sign-in form's cookie is set as the session's is (its flags by the same
        # function); httpx, on http, would not send a Secure cookie back to sign in.
        proxied = create_app(settings.model_copy(update={"trusted_proxies": [TRUSTED_PROXY]}))
        https = {"X-Forwarded-For": "198.51.100.9", "X-Forwarded-Proto": "https"}
        try:
            async with transport_client(proxied, TRUSTED_PROXY) as c:
                r = await c.get("/portal/sign-in", headers=https)
                assert "portal_sign_in=" in r.headers["set-cookie"]
                assert "secure" in r.headers["set-cookie"].lower()
            # From any other peer the header is not believed.
            async with transport_client(proxied) as c:
                r = await c.get("/portal/sign-in", headers=https)
                assert "secure" not in r.headers["set-cookie"].lower()
        finally:
            await app_state(proxied).throttle.close()
            await app_state(proxied).engine.dispose()

    async def test_every_portal_answer_carries_the_security_headers(
        self, client: httpx.AsyncClient, people: dict[str, str]
    ):
        answers = [
            await client.get("/portal/sign-in"),
            await client.get("/portal/"),
            await client.get("/portal/static/portal.css"),
            await client.get("/portal/static/vendor/htmx.min.js"),
            await sign_in(client, people["operator"], "wrong"),
            await client.post("/portal/sign-out"),
        ]
        await sign_in(client, people["operator"])
        answers.append(await client.get("/portal/"))
        for r in answers:
            csp = r.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, r.url
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] == "same-origin"
        assert answers[2].status_code == 200 and answers[2].headers["content-type"].startswith(
            "text/css"
        )
        assert answers[3].status_code == 200 and "htmx" in answers[3].text
        # No inline script: every <script> names a file.
        assert re.findall(r"<script(?![^>]*\bsrc=)", answers[-1].text) == []
        assert "hx-headers" in answers[-1].text
