"""docs/portal.md, "Profile": the signed-in user's password, API tokens and sessions over
HTTP, on both databases (two-factor enrolment: test_two_factor.py)."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry, ApiKey, Client, PortalSession, User
from cloudadmin.db.types import utcnow
from cloudadmin.kit.crypto import hash_password, verify_password
from cloudadmin.web.app_state import app_state
from tests.factories import make_key, make_seller, make_user
from tests.portal.people import PASSWORD, People, sign_in

NEW_PASSWORD = "a fresh and long portal password"
TOKEN = re.compile(r'id="new-token" type="text" readonly value="([^"]+)"')


def browser(app: FastAPI, address: str = "198.51.100.50") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def change_password(
    client: httpx.AsyncClient,
    csrf: str,
    current: str = PASSWORD,
    new: str = NEW_PASSWORD,
    again: str | None = None,
) -> httpx.Response:
    return await client.post(
        "/portal/profile/password",
        data={
            "csrf_token": csrf,
            "current_password": current,
            "password": new,
            "password_again": new if again is None else again,
        },
    )


async def stored_hash(session: AsyncSession, user_id: int) -> str:
    session.expire_all()
    found = await session.scalar(select(User.password_hash).where(User.id == user_id))
    await session.rollback()
    assert found is not None
    return found


async def actions(session: AsyncSession, user_id: int) -> list[tuple[str, int, bool]]:
    session.expire_all()
    rows = (
        await session.execute(
            select(
                ActivityLogEntry.actions, ActivityLogEntry.status_code, ActivityLogEntry.reverted
            )
            .where(ActivityLogEntry.user_id == user_id, ActivityLogEntry.actions.like("portal.%"))
            .order_by(ActivityLogEntry.id)
        )
    ).all()
    await session.rollback()
    return [tuple(row) for row in rows]  # type: ignore[misc]


class TestPassword:
    async def test_a_change_ends_every_other_session_and_keeps_this_one(
        self, app: FastAPI, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        email = people.emails["reseller"]
        csrf = await sign_in(client, email)
        async with browser(app) as other:
            await sign_in(other, email)
            r = await change_password(client, csrf)
            assert r.status_code == 303 and r.headers["location"] == "/portal/profile?done=password"
            # The other browser is signed out; this one stays.
            assert (await other.get("/portal/profile")).status_code == 303
        page = await client.get(r.headers["location"])
        assert page.status_code == 200 and "every other session of yours has ended" in page.text
        assert verify_password(
            await stored_hash(session, people.user_ids["reseller"]), NEW_PASSWORD
        )
        async with browser(app, "198.51.100.51") as fresh:
            await sign_in(fresh, email, NEW_PASSWORD)
        assert ("portal.change_password", 303, False) in await actions(
            session, people.user_ids["reseller"]
        )

    @pytest.mark.parametrize(
        ("current", "new", "again", "field", "message"),
        [
            ("wrong", NEW_PASSWORD, None, "current_password", "The current password is wrong."),
            (PASSWORD, "12345678", None, "password", "This password is too common."),
            (PASSWORD, "short", None, "password", "too short"),
            (PASSWORD, NEW_PASSWORD, "another", "password_again", "The two new passwords differ."),
        ],
    )
    async def test_a_refusal_names_the_field_and_writes_nothing(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        current: str,
        new: str,
        again: str | None,
        field: str,
        message: str,
    ):
        csrf = await sign_in(client, people.emails["operator"])
        async with browser(app) as other:
            await sign_in(other, people.emails["operator"])
            r = await change_password(client, csrf, current, new, again)
            assert r.status_code == 400
            assert f'id="f-{field}"' in r.text and f'aria-describedby="e-{field}"' in r.text
            assert message in r.text
            # Nothing typed into a password field is shown again.
            assert new not in re.findall(r'value="([^"]*)"', r.text)
            assert (await other.get("/portal/profile")).status_code == 200
        assert verify_password(await stored_hash(session, people.user_ids["operator"]), PASSWORD)
        assert ("portal.change_password", 400, True) in await actions(
            session, people.user_ids["operator"]
        )

    async def test_wrong_current_passwords_are_throttled(
        self, app: FastAPI, settings: Settings, people: People
    ):
        limited = create_app(settings.model_copy(update={"auth_failure_limit": "2/minute"}))
        try:
            async with browser(limited, "198.51.100.60") as c:
                csrf = await sign_in(c, people.emails["operator"])
                for _ in range(2):
                    assert (await change_password(c, csrf, "wrong")).status_code == 400
                # The next sign-in from this address is refused before any check.
                form = await c.get("/portal/sign-in")
                assert form.status_code == 303  # still signed in
                c.cookies.clear()
                form = await c.get("/portal/sign-in")
                r = await c.post(
                    "/portal/sign-in",
                    data={
                        "email": people.emails["operator"],
                        "password": PASSWORD,
                        "csrf_token": re.findall(r'name="csrf_token" value="([^"]+)"', form.text)[
                            0
                        ],
                    },
                )
                assert r.status_code == 429
        finally:
            await app_state(limited).throttle.close()
            await app_state(limited).engine.dispose()


class TestApiTokens:
    async def test_the_secret_is_shown_once_works_and_revoking_ends_it(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        r = await client.post(
            "/portal/profile/tokens",
            data={"csrf_token": csrf, "name": "deploy bot", "description": "CI", "exp_date": ""},
        )
        assert r.status_code == 200, r.text
        found = TOKEN.search(r.text)
        assert found
        token = found.group(1)
        # The API takes it: it acts as the user.
        me = await client.get("/iam/clients/me", headers={"Authorization": f"apikey {token}"})
        assert me.status_code == 200 and me.json()["id"] == people.reseller_id
        secret = token.split("_", 1)[1]
        page = await client.get("/portal/profile")
        assert "deploy bot" in page.text and "Never" in page.text
        assert secret not in page.text  # never shown again
        session.expire_all()
        key = await session.scalar(select(ApiKey).where(ApiKey.name == "deploy bot"))
        assert key is not None and secret not in key.secret_hash
        key_id = key.id
        await session.rollback()
        # The activity log has the creation, not the secret.
        session.expire_all()
        data = await session.scalar(
            select(ActivityLogEntry.data).where(
                ActivityLogEntry.actions == "portal.create_api_token"
            )
        )
        await session.rollback()
        assert data is not None and secret not in data
        r = await client.post(f"/portal/profile/tokens/{key_id}/revoke", data={"csrf_token": csrf})
        assert r.status_code == 303 and r.headers["location"] == "/portal/profile?done=revoked"
        me = await client.get("/iam/clients/me", headers={"Authorization": f"apikey {token}"})
        assert me.status_code == 401
        page = await client.get(r.headers["location"])
        assert "The API token is revoked" in page.text
        assert "deploy bot" not in page.text  # the list shows the live tokens

    async def test_an_expiry_date_and_a_role(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        csrf = await sign_in(client, people.emails["operator"])
        day = (utcnow() + timedelta(days=30)).date().isoformat()
        r = await client.post(
            "/portal/profile/tokens",
            data={"csrf_token": csrf, "name": "reader", "exp_date": day, "role": "2"},
        )
        assert r.status_code == 200, r.text
        assert f"expires: {day} 23:59 UTC" in r.text and "Users" in r.text
        session.expire_all()
        key = await session.scalar(select(ApiKey).where(ApiKey.name == "reader"))
        assert key is not None and key.role_id == 2
        assert key.expires_at is not None and key.expires_at.date().isoformat() == day
        await session.rollback()

    @pytest.mark.parametrize(
        ("data", "field", "message"),
        [
            ({"name": " "}, "name", "at least 1 character"),
            ({"name": "x", "exp_date": "2020-01-01"}, "exp_date", "Must be in the future."),
            ({"name": "x", "exp_date": "soon"}, "exp_date", "YYYY-MM-DD"),
            ({"name": "x", "role": "77"}, "role", "Invalid role"),
        ],
    )
    async def test_a_refused_token_names_the_field_and_writes_nothing(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        data: dict[str, str],
        field: str,
        message: str,
    ):
        csrf = await sign_in(client, people.emails["operator"])
        r = await client.post("/portal/profile/tokens", data={"csrf_token": csrf, **data})
        assert r.status_code == 400, r.text
        assert f'aria-describedby="e-{field}"' in r.text and message in r.text
        assert await session.scalar(select(ApiKey.id)) is None

    async def test_another_user_s_token_is_the_404_page(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        # The other reseller's token, and a token of a colleague in the same account.
        other = await session.get(User, people.user_ids["other_reseller"])
        assert other is not None
        theirs = int((await make_key(session, other)).split("_")[0])
        await session.commit()
        csrf = await sign_in(client, people.emails["reseller"])
        r = await client.post(f"/portal/profile/tokens/{theirs}/revoke", data={"csrf_token": csrf})
        assert r.status_code == 404 and "Not found" in r.text
        r = await client.post(
            "/portal/profile/tokens/99999999999/revoke", data={"csrf_token": csrf}
        )
        assert r.status_code in (400, 404)
        session.expire_all()
        assert await session.scalar(select(ApiKey.revoked).where(ApiKey.id == theirs)) is False
        await session.rollback()

    async def test_a_colleague_s_token_is_not_listed_nor_revoked(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        account = await session.get(Client, people.reseller_id)
        assert account is not None
        colleague = await make_user(session, account)
        key = int((await make_key(session, colleague)).split("_")[0])
        await session.execute(update(ApiKey).where(ApiKey.id == key).values(name="colleague's key"))
        await session.commit()
        csrf = await sign_in(client, people.emails["reseller"])
        page = await client.get("/portal/profile")
        assert "colleague&#39;s key" not in page.text and "colleague's key" not in page.text
        r = await client.post(f"/portal/profile/tokens/{key}/revoke", data={"csrf_token": csrf})
        assert r.status_code == 404


class TestSessions:
    async def test_the_list_marks_this_one_and_the_others_can_be_signed_out(
        self, app: FastAPI, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        email = people.emails["operator"]
        csrf = await sign_in(client, email)
        async with browser(app) as other:
            await sign_in(other, email)
            page = await client.get("/portal/profile")
            assert page.text.count("This session") == 1
            assert page.text.count("Another session") == 1
            r = await client.post("/portal/profile/sessions/end-others", data={"csrf_token": csrf})
            assert r.status_code == 303
            assert (await other.get("/portal/")).status_code == 303
        page = await client.get("/portal/profile?done=signed-out")
        assert "Another session" not in page.text, page.text[page.text.index("Sessions") :]
        assert "Every other session" in page.text

    async def test_an_idle_session_is_not_listed_and_its_next_page_is_the_sign_in(
        self, app: FastAPI, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        email = people.emails["operator"]
        await sign_in(client, email)
        async with browser(app) as idle:
            await sign_in(idle, email)
            idle_cookie = idle.cookies["portal_session"]
            # Age the other session past the idle timeout.
            digest = hashlib.sha256(idle_cookie.encode()).hexdigest()
            await session.execute(
                update(PortalSession)
                .where(PortalSession.id_hash == digest)
                .values(last_seen_at=utcnow() - timedelta(minutes=31))
            )
            await session.commit()
            page = await client.get("/portal/profile")
            assert "Another session" not in page.text
            r = await idle.get("/portal/profile")
            assert r.status_code == 303 and r.headers["location"].startswith("/portal/sign-in")


async def test_a_client_user_gets_the_not_here_page(client: httpx.AsyncClient, people: People):
    await sign_in(client, people.emails["client"])
    r = await client.get("/portal/profile")
    assert r.status_code == 403


async def test_no_change_without_the_csrf_token(
    client: httpx.AsyncClient, people: People, session: AsyncSession
):
    await sign_in(client, people.emails["operator"])
    r = await client.post(
        "/portal/profile/password",
        data={
            "current_password": PASSWORD,
            "password": NEW_PASSWORD,
            "password_again": NEW_PASSWORD,
        },
    )
    assert r.status_code == 403
    r = await client.post("/portal/profile/tokens", data={"name": "x"})
    assert r.status_code == 403
    assert verify_password(await stored_hash(session, people.user_ids["operator"]), PASSWORD)
    assert await session.scalar(select(ApiKey.id)) is None


async def test_a_seller_finds_a_note_and_no_change(
    client: httpx.AsyncClient, people: People, session: AsyncSession
):
    """A seller signs in (it is not a user): its profile is its reseller's to keep, and
    the user's changes are the 404 page; no second factor is asked of it."""
    reseller = await session.get(Client, people.reseller_id)
    assert reseller is not None
    await make_seller(
        session,
        reseller,
        email="profile-seller@example.com",
        password_hash=hash_password(PASSWORD),
        activated=True,
    )
    await session.commit()
    csrf = await sign_in(client, "profile-seller@example.com")
    page = await client.get("/portal/profile")
    assert page.status_code == 200 and "a seller" in page.text
    assert 'action="/portal/profile/password"' not in page.text
    for path in ("/portal/profile/password", "/portal/profile/tokens"):
        r = await client.post(path, data={"csrf_token": csrf, "name": "x"})
        assert r.status_code == 404, path
    session.expire_all()
    assert await session.scalar(select(ApiKey.id)) is None
