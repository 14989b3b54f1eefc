"""docs/portal.md, "Signing in" and "Profile": two-factor sign-in with TOTP over HTTP, on
both databases. Codes are computed with pyotp from the secret the enrolment page shows,
for the current time step or the next one (both accepted), never by waiting."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pyotp
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.models import ActivityLogEntry, PortalSession, User, UserTwoFactor
from cloudadmin.db.secret_rotation import KINDS, rotate_secrets
from cloudadmin.db.types import utcnow
from cloudadmin.iam.sign_in.two_factor import HOLD, MAX_WRONG_CODES, PendingSignIns
from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.web.app_state import app_state
from tests.portal.people import PASSWORD, People, sign_in, token_of

SECRET = re.compile(r'id="totp-secret">([A-Z2-7 ]+)<')


def code_at(secret: str, offset: int = 0) -> str:
    """The code of the current time step plus ``offset`` (one step either side of the
    current one is accepted)."""
    totp = pyotp.TOTP(secret)
    return totp.generate_otp(totp.timecode(utcnow()) + offset)


async def enrol(client: httpx.AsyncClient, csrf: str) -> str:
    """Turns two-factor sign-in on from the profile; the secret (the current step's
    code is used up by the confirmation)."""
    started = await client.post("/portal/profile/two-factor", data={"csrf_token": csrf})
    assert started.status_code == 200, started.text
    found = SECRET.search(started.text)
    assert found, started.text
    secret = found.group(1).replace(" ", "")
    assert '<svg role="img"' in started.text and "<title>" in started.text
    done = await client.post(
        "/portal/profile/two-factor/confirm",
        data={"csrf_token": csrf, "one_time_password": code_at(secret)},
    )
    assert done.status_code == 303, done.text
    return secret


async def password_step(client: httpx.AsyncClient, email: str) -> httpx.Response:
    form = await client.get("/portal/sign-in")
    return await client.post(
        "/portal/sign-in",
        data={"email": email, "password": PASSWORD, "csrf_token": token_of(form.text)},
    )


async def code_step(client: httpx.AsyncClient, code: str) -> httpx.Response:
    form = await client.get("/portal/sign-in/code")
    assert form.status_code == 200, form.text
    return await client.post(
        "/portal/sign-in/code",
        data={"one_time_password": code, "csrf_token": token_of(form.text)},
    )


def browser(app: FastAPI, address: str = "198.51.100.20") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def session_count(session: AsyncSession) -> int:
    session.expire_all()
    rows = len(list((await session.execute(select(PortalSession.id_hash))).scalars()))
    await session.rollback()
    return rows


class TestEnrolment:
    async def test_enrolment_shows_the_secret_until_confirmed_then_never_again(
        self,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        started = await client.post("/portal/profile/two-factor", data={"csrf_token": csrf})
        found = SECRET.search(started.text)
        assert found
        secret = found.group(1).replace(" ", "")
        # Not in force yet: a wrong code shows the same secret again (400).
        wrong = await client.post(
            "/portal/profile/two-factor/confirm",
            data={"csrf_token": csrf, "one_time_password": "000000"},
        )
        assert wrong.status_code == 400 and "The code is wrong" in wrong.text
        assert found.group(1) in wrong.text
        user = await session.get(User, people.user_ids["reseller"])
        assert user is not None and not user.two_fa
        await session.rollback()
        done = await client.post(
            "/portal/profile/two-factor/confirm",
            data={"csrf_token": csrf, "one_time_password": code_at(secret)},
        )
        assert done.status_code == 303
        profile = await client.get(done.headers["location"])
        assert "Two-factor sign-in is on" in profile.text
        assert secret not in profile.text and found.group(1) not in profile.text
        session.expire_all()
        row = await session.get(UserTwoFactor, people.user_ids["reseller"])
        assert row is not None and row.confirmed_at is not None
        # Encrypted at rest.
        assert secret not in row.secret_encrypted
        assert SecretBox(*settings.secret_keys()).decrypt(row.secret_encrypted) == secret
        user = await session.get(User, people.user_ids["reseller"])
        assert user is not None and user.two_fa
        await session.rollback()
        # Starting again while it is on is refused.
        again = await client.post("/portal/profile/two-factor", data={"csrf_token": csrf})
        assert again.status_code == 400 and "turn it off first" in again.text

    async def test_turning_it_off_needs_a_code_or_the_password(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        csrf = await sign_in(client, people.emails["operator"])
        secret = await enrol(client, csrf)
        off = "/portal/profile/two-factor/off"
        empty = await client.post(off, data={"csrf_token": csrf})
        assert (
            empty.status_code == 400
            and "Enter a code from your app, or your password" in empty.text
        )
        wrong = await client.post(off, data={"csrf_token": csrf, "current_password": "nope"})
        assert wrong.status_code == 400 and "The current password is wrong." in wrong.text
        used = await client.post(
            off, data={"csrf_token": csrf, "one_time_password": code_at(secret)}
        )
        assert used.status_code == 400 and "used already" in used.text  # the enrolment's code
        ok = await client.post(
            off, data={"csrf_token": csrf, "one_time_password": code_at(secret, 1)}
        )
        assert ok.status_code == 303
        session.expire_all()
        user = await session.get(User, people.user_ids["operator"])
        assert user is not None and not user.two_fa
        assert await session.get(UserTwoFactor, people.user_ids["operator"]) is None
        await session.rollback()
        # ... and with the password, after enrolling anew.
        await enrol(client, csrf)
        r = await client.post(off, data={"csrf_token": csrf, "current_password": PASSWORD})
        assert r.status_code == 303

    async def test_the_changes_are_in_the_activity_log_without_the_code(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        csrf = await sign_in(client, people.emails["operator"])
        await enrol(client, csrf)
        session.expire_all()
        rows = list(
            (
                await session.execute(
                    select(ActivityLogEntry.actions, ActivityLogEntry.data).where(
                        ActivityLogEntry.actions.like("portal.%two_factor")
                    )
                )
            ).all()
        )
        await session.rollback()
        assert {a for a, _ in rows} == {"portal.start_two_factor", "portal.confirm_two_factor"}
        assert all(re.search(r"\d{6}", data) is None for _, data in rows)


class TestSigningIn:
    async def test_a_user_with_two_fa_needs_the_code_before_any_session(
        self, app: FastAPI, people: People, session: AsyncSession
    ):
        email = people.emails["reseller"]
        async with browser(app) as first:
            secret = await enrol(first, await sign_in(first, email))
        await session.execute(PortalSession.__table__.delete())
        await session.commit()
        async with browser(app) as c:
            r = await password_step(c, email)
            assert r.status_code == 303 and r.headers["location"] == "/portal/sign-in/code"
            assert await session_count(session) == 0
            # The password alone opens nothing.
            assert (await c.get("/portal/")).status_code == 303
            wrong = await code_step(c, "123456")
            assert wrong.status_code == 401 and "The code is wrong" in wrong.text
            assert await session_count(session) == 0
            # The enrolment used the current step's code: the next step's passes.
            ok = await code_step(c, code_at(secret, 1))
            assert ok.status_code == 303 and ok.headers["location"] == "/portal/"
            assert (await c.get("/portal/")).status_code == 200
            assert "portal_two_factor" not in c.cookies
        assert await session_count(session) == 1
        # A code is used once: the same code again, in another browser, is refused.
        async with browser(app, "198.51.100.21") as other:
            await password_step(other, email)
            replay = await code_step(other, code_at(secret, 1))
            assert replay.status_code == 401
        assert await session_count(session) == 1

    async def test_the_next_path_survives_the_code_step(self, app: FastAPI, people: People):
        email = people.emails["operator"]
        async with browser(app) as first:
            secret = await enrol(first, await sign_in(first, email))
        async with browser(app) as c:
            asked = await c.get("/portal/profile")
            form = await c.get(asked.headers["location"])
            r = await c.post(
                "/portal/sign-in",
                data={
                    "email": email,
                    "password": PASSWORD,
                    "next": "/portal/profile",
                    "csrf_token": token_of(form.text),
                },
            )
            assert r.headers["location"] == "/portal/sign-in/code?next=%2Fportal%2Fprofile"
            page = await c.get(r.headers["location"])
            r = await c.post(
                "/portal/sign-in/code",
                data={
                    "one_time_password": code_at(secret, 1),
                    "next": "/portal/profile",
                    "csrf_token": token_of(page.text),
                },
            )
            assert r.status_code == 303 and r.headers["location"] == "/portal/profile"

    async def test_wrong_codes_are_throttled(
        self, app: FastAPI, settings: Settings, people: People
    ):
        email = people.emails["operator"]
        async with browser(app) as first:
            secret = await enrol(first, await sign_in(first, email))
        limited = create_app(settings.model_copy(update={"auth_failure_limit": "2/minute"}))
        try:
            async with browser(limited, "198.51.100.30") as c:
                await password_step(c, email)
                for _ in range(2):
                    assert (await code_step(c, "000000")).status_code == 401
                form = await c.get("/portal/sign-in/code")
                r = await c.post(
                    "/portal/sign-in/code",
                    data={
                        "one_time_password": code_at(secret, 1),
                        "csrf_token": token_of(form.text),
                    },
                )
                assert r.status_code == 429 and "Too many" in r.text
        finally:
            await app_state(limited).throttle.close()
            await app_state(limited).engine.dispose()

    async def test_past_ten_wrong_codes_in_a_row_no_code_passes_for_a_while(
        self, app: FastAPI, people: People, session: AsyncSession
    ):
        email = people.emails["operator"]
        user_id = people.user_ids["operator"]
        async with browser(app) as first:
            secret = await enrol(first, await sign_in(first, email))
        # From many addresses (the failure throttle counts each on its own).
        for n in range(MAX_WRONG_CODES):
            async with browser(app, f"198.51.100.{100 + n}") as c:
                await password_step(c, email)
                assert (await code_step(c, "000000")).status_code == 401
        async with browser(app, "198.51.100.200") as c:
            await password_step(c, email)
            held = await code_step(c, code_at(secret, 1))
            assert held.status_code == 401 and "The code is wrong" in held.text
            session.expire_all()
            row = await session.get(UserTwoFactor, user_id)
            assert row is not None and row.failed_codes == MAX_WRONG_CODES + 1
            # When the hold has passed (its last failure aged, not waited for), the
            # right code passes, and the count starts again.
            await session.execute(
                update(UserTwoFactor)
                .where(UserTwoFactor.user_id == user_id)
                .values(last_failed_at=utcnow() - HOLD - timedelta(seconds=1))
            )
            await session.commit()
            ok = await code_step(c, code_at(secret, 1))
            assert ok.status_code == 303
        session.expire_all()
        row = await session.get(UserTwoFactor, user_id)
        assert row is not None and (row.failed_codes, row.last_failed_at) == (0, None)
        await session.rollback()

    async def test_the_pending_step_expires_and_a_forged_one_signs_in_no_one(
        self, app: FastAPI, people: People, session: AsyncSession, settings: Settings
    ):
        email = people.emails["operator"]
        user_id = people.user_ids["operator"]
        async with browser(app) as first:
            secret = await enrol(first, await sign_in(first, email))
        await session.execute(PortalSession.__table__.delete())
        await session.commit()
        user = await session.get(User, user_id)
        assert user is not None and user.password_hash is not None
        tickets = PendingSignIns.of(settings.secret_keys(), settings.portal_two_factor_minutes)
        stale = tickets.make(user_id, user.password_hash, utcnow() - timedelta(minutes=6))
        other_key = PendingSignIns.of(["another key"], 5).make(user_id, user.password_hash)
        await session.rollback()
        for ticket in (stale, other_key, f"{user_id}.1.{'A' * 43}", "garbage"):
            async with browser(app) as c:
                c.cookies.set("portal_two_factor", ticket, path="/portal")
                r = await c.get("/portal/sign-in/code")
                assert (
                    "The sign-in took too long" in r.text
                    and 'name="one_time_password"' not in r.text
                )
                form = await c.get("/portal/sign-in")
                r = await c.post(
                    "/portal/sign-in/code",
                    data={
                        "one_time_password": code_at(secret, 1),
                        "csrf_token": token_of(form.text),
                    },
                )
                assert r.status_code == 401
        assert await session_count(session) == 0

    async def test_a_password_change_voids_a_pending_step(
        self, app: FastAPI, people: People, session: AsyncSession
    ):
        email = people.emails["operator"]
        async with browser(app) as owner:
            csrf = await sign_in(owner, email)
            await enrol(owner, csrf)
            async with browser(app, "198.51.100.40") as c:
                await password_step(c, email)
                changed = await owner.post(
                    "/portal/profile/password",
                    data={
                        "csrf_token": csrf,
                        "current_password": PASSWORD,
                        "password": "another good portal password",
                        "password_again": "another good portal password",
                    },
                )
                assert changed.status_code == 303
                r = await c.get("/portal/sign-in/code")
                assert "The sign-in took too long" in r.text

    async def test_two_fa_on_without_a_secret_here_lets_no_code_pass(
        self, client: httpx.AsyncClient, people: People, session: AsyncSession
    ):
        """An imported user whose two_fa is on but whose authenticator is not enrolled
        here: no code passes (docs/portal.md)."""
        user = await session.get(User, people.user_ids["reseller"])
        assert user is not None
        user.two_fa = True
        await session.commit()
        r = await password_step(client, people.emails["reseller"])
        assert r.headers["location"] == "/portal/sign-in/code"
        assert (await code_step(client, "123456")).status_code == 401
        assert await session_count(session) == 0

    async def test_a_password_reset_leaves_two_factor_sign_in_on(
        self, app: FastAPI, people: People, session: AsyncSession, settings: Settings
    ):
        email = people.emails["operator"]
        async with browser(app) as first:
            await enrol(first, await sign_in(first, email))
        user = await session.get(User, people.user_ids["operator"])
        assert user is not None
        link = SetPasswordTokens(*settings.secret_keys()).make(user)
        await session.rollback()
        new = "the password after the reset"
        async with browser(app, "198.51.100.70") as c:
            form = await c.get("/portal/reset-password", params={"token": link})
            r = await c.post(
                "/portal/reset-password",
                data={
                    "token": link,
                    "password": new,
                    "password_again": new,
                    "csrf_token": token_of(form.text),
                },
            )
            assert r.status_code == 303
            form = await c.get("/portal/sign-in")
            r = await c.post(
                "/portal/sign-in",
                data={"email": email, "password": new, "csrf_token": token_of(form.text)},
            )
            assert r.status_code == 303 and r.headers["location"] == "/portal/sign-in/code"
            assert (await c.get("/portal/")).status_code == 303


class TestRotation:
    async def test_rotate_secrets_re_encrypts_the_totp_secret(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        people: People,
        session: AsyncSession,
        settings: Settings,
    ):
        secret = await enrol(client, await sign_in(client, people.emails["operator"]))
        [kind] = [k for k in KINDS if k.name == "two-factor sign-in secrets"]
        old_key = settings.secret_keys()[0]
        box = SecretBox("a new secret key", old_key)
        [report] = await rotate_secrets(app_state(app).engine, box, kinds=[kind])
        assert (report.rotated, report.undecryptable) == (1, 0)
        session.expire_all()
        row = await session.get(UserTwoFactor, people.user_ids["operator"])
        assert row is not None
        assert SecretBox("a new secret key").decrypt(row.secret_encrypted) == secret
        await session.rollback()


@pytest.mark.parametrize("path", ["/portal/profile/two-factor", "/portal/profile/two-factor/off"])
async def test_no_change_without_the_csrf_token(
    client: httpx.AsyncClient, people: People, session: AsyncSession, path: str
):
    await sign_in(client, people.emails["operator"])
    r = await client.post(path, data={"current_password": PASSWORD})
    assert r.status_code == 403
    assert await session.get(UserTwoFactor, people.user_ids["operator"]) is None
