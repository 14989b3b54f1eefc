"""The Users section (docs/portal.md, "Users") over HTTP on both databases: the users
search and a user's edit under the API's rules (tenancy, an operator's user, one's own
group), the sellers' list and its actions (add with the invitation, resend, reset the
password, block and activate, delete), bad input, CSRF and the activity log."""

from __future__ import annotations

from html import unescape

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import (
    ActivityLogEntry,
    Client,
    MailMessage,
    PortalSession,
    Seller,
    User,
)
from cloudadmin.db.models.accounts import ENGINEERS
from tests.factories import make_seller, make_user
from tests.portal.crawl import new_client
from tests.portal.people import PASSWORD, People, sign_in
from tests.portal.test_sellers_sign_in import (
    NEW_PASSWORD,
    link_mailed_to,
    mail_server,
    refused_sign_in,
    seller_row,
    set_password,
    token_in,
)


async def actions(session: AsyncSession) -> list[tuple[str, int, bool]]:
    """The activity log's portal changes: action, status, reverted."""
    rows = (
        await session.execute(
            select(
                ActivityLogEntry.actions, ActivityLogEntry.status_code, ActivityLogEntry.reverted
            )
            .where(ActivityLogEntry.actions != "portal.sign_in")
            .order_by(ActivityLogEntry.id)
        )
    ).all()
    await session.rollback()
    return [(a, s, r) for a, s, r in rows]


async def user_state(session: AsyncSession, user_id: int) -> tuple[str | None, str, list[int]]:
    session.expire_all()
    user = await session.get(User, user_id)
    assert user is not None
    state = (user.name, user.lang, [g.id for g in user.groups])
    await session.rollback()
    return state


async def mails(session: AsyncSession) -> int:
    count = (await session.execute(select(func.count()).select_from(MailMessage))).scalar_one()
    await session.rollback()
    return int(count)


class TestSearch:
    async def test_a_reseller_finds_its_own_and_its_clients_users_only(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/users")
        assert r.status_code == 200
        assert people.emails["reseller"] in r.text
        assert people.emails["client"] in r.text
        assert people.emails["other_reseller"] not in r.text
        assert people.emails["operator"] not in r.text
        assert "2 users" in r.text

    async def test_by_email_name_and_account(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        client_account = await session.get(Client, people.client_id)
        assert client_account is not None
        named = await make_user(session, client_account, name="Zelda Quartz")
        company = client_account.company_name
        await session.commit()
        await sign_in(client, people.emails["operator"])
        r = await client.get("/portal/users", params={"name": "zelda q"})
        assert named.email in r.text and "1 user," in r.text
        r = await client.get("/portal/users", params={"email": people.emails["client"].upper()})
        assert people.emails["client"] in r.text and "1 user," in r.text
        r = await client.get("/portal/users", params={"account": str(people.client_id)})
        assert "2 users" in r.text
        r = await client.get("/portal/users", params={"account": company[2:].lower()})
        assert named.email in r.text
        # The operator sees every account's users; % is no wildcard.
        r = await client.get("/portal/users", params={"email": "%"})
        assert "0 users" in r.text
        r = await client.get("/portal/users")
        assert people.emails["other_reseller"] in r.text

    async def test_htmx_gets_only_the_results(self, client: httpx.AsyncClient, people: People):
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/users", headers={"HX-Request": "true"})
        assert r.status_code == 200
        assert r.text.lstrip().startswith('<div id="user-results"')
        assert "<h1>" not in r.text

    async def test_a_bad_page_number_is_a_field_message(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/users", params={"page": "x", "email": "<b>"})
        assert r.status_code == 400
        assert "A page number from 1." in r.text
        assert "&lt;b&gt;" in r.text


class TestEdit:
    async def test_a_reseller_edits_a_clients_user(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        user_id = people.user_ids["client"]
        page = await client.get(f"/portal/users/{user_id}")
        assert page.status_code == 200
        r = await client.post(
            f"/portal/users/{user_id}",
            data={"csrf_token": csrf, "name": "Renamed", "lang": "de", "group": str(ENGINEERS)},
        )
        assert r.status_code == 303, r.text
        assert await user_state(session, user_id) == ("Renamed", "de", [ENGINEERS])
        shown = await client.get(r.headers["location"])
        assert "The user was saved." in shown.text
        assert await actions(session) == [("portal.update_user", 303, False)]

    async def test_bad_input_keeps_what_was_typed_and_writes_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        user_id = people.user_ids["client"]
        before = await user_state(session, user_id)
        for data, field in [
            ({"name": "Typed <name>", "lang": "xx", "group": "1"}, "f-lang"),
            ({"name": "n" * 256, "lang": "en", "group": "1"}, "f-name"),
            ({"name": "Typed <name>", "lang": "en", "group": "4242"}, "f-group"),
        ]:
            r = await client.post(f"/portal/users/{user_id}", data={"csrf_token": csrf, **data})
            assert r.status_code == 400, r.text
            assert f'id="{field}"' in r.text and 'aria-invalid="true"' in r.text
            assert "nothing was changed" in r.text
        assert "Typed &lt;name&gt;" in r.text
        assert await user_state(session, user_id) == before
        logged = await actions(session)
        assert logged == [("portal.update_user", 400, True)] * 3

    async def test_another_tenants_user_is_the_404_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        other = people.user_ids["other_reseller"]
        before = await user_state(session, other)
        for path in (f"/portal/users/{other}", "/portal/users/99999999", "/portal/users/0"):
            assert (await client.get(path)).status_code == 404, path
        r = await client.post(
            f"/portal/users/{other}",
            data={"csrf_token": csrf, "name": "x", "lang": "en", "group": "1"},
        )
        assert r.status_code == 404
        assert await user_state(session, other) == before

    async def test_the_rules_of_the_api(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        # An operator's user: the operator edits it, nobody else sees it.
        csrf = await sign_in(client, people.emails["operator"])
        own = people.user_ids["operator"]
        # One's own group cannot be changed (403), its name can.
        r = await client.post(
            f"/portal/users/{own}",
            data={"csrf_token": csrf, "name": "Op", "lang": "en", "group": str(ENGINEERS)},
        )
        assert r.status_code == 403
        page = await client.get(f"/portal/users/{own}")
        assert "Your own group cannot be changed here." in page.text
        current = await user_state(session, own)
        group = str(current[2][0]) if current[2] else ""
        r = await client.post(
            f"/portal/users/{own}",
            data={"csrf_token": csrf, "name": "Op", "lang": "en", "group": group},
        )
        assert r.status_code == 303
        assert (await user_state(session, own))[0] == "Op"

    async def test_a_post_without_the_token_is_refused(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        user_id = people.user_ids["client"]
        before = await user_state(session, user_id)
        r = await client.post(
            f"/portal/users/{user_id}", data={"name": "x", "lang": "de", "group": "1"}
        )
        assert r.status_code == 403
        assert await user_state(session, user_id) == before


class TestSellers:
    async def test_adding_needs_the_resellers_mail_server_and_a_free_address(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        csrf = await sign_in(client, people.emails["reseller"])
        data = {"csrf_token": csrf, "full_name": "Sam <Seller>", "email": "sam@example.com"}
        r = await client.post("/portal/users/sellers/new", data=data)
        assert r.status_code == 400
        assert "no mail server" in r.text
        assert "Sam &lt;Seller&gt;" in r.text
        await mail_server(session, people.reseller_id)
        taken = {**data, "email": people.emails["seller"].upper()}
        r = await client.post("/portal/users/sellers/new", data=taken)
        assert r.status_code == 400
        assert "already exists" in r.text
        r = await client.post("/portal/users/sellers/new", data={**data, "email": "not mail"})
        assert r.status_code == 400
        assert 'id="f-email"' in r.text and 'aria-invalid="true"' in r.text
        emails = (await session.execute(select(Seller.email))).scalars().all()
        await session.rollback()
        assert "sam@example.com" not in emails
        assert await mails(session) == 0
        r = await client.post("/portal/users/sellers/new", data=data)
        assert r.status_code == 303
        listed = await client.get(r.headers["location"])
        assert "The seller was added and its invitation mailed." in listed.text
        assert "Sam &lt;Seller&gt;" in listed.text and "Not activated" in listed.text
        assert await mails(session) == 1
        assert await actions(session) == [
            ("portal.add_seller", 400, True),
            ("portal.add_seller", 400, True),
            ("portal.add_seller", 400, True),
            ("portal.add_seller", 303, False),
        ]

    async def test_an_operator_names_the_reseller(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await mail_server(session, people.other_reseller_id)
        csrf = await sign_in(client, people.emails["operator"])
        data = {"csrf_token": csrf, "full_name": "Olga", "email": "olga@example.com"}
        r = await client.post("/portal/users/sellers/new", data=data)
        assert r.status_code == 400
        assert "reseller" in r.text
        r = await client.post(
            "/portal/users/sellers/new", data={**data, "reseller": str(people.other_reseller_id)}
        )
        assert r.status_code == 303, r.text
        seller = (
            await session.execute(select(Seller).where(Seller.email == "olga@example.com"))
        ).scalar_one()
        assert seller.reseller_id == people.other_reseller_id
        await session.rollback()

    async def test_resend_reset_block_activate_and_delete(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await mail_server(session, people.reseller_id)
        reseller = await session.get(Client, people.reseller_id)
        assert reseller is not None
        invited = await make_seller(session, reseller)
        invited_id, invited_email = invited.id, invited.email
        await session.commit()
        seller_id = people.seller_id
        csrf = await sign_in(client, people.emails["reseller"])
        base = "/portal/users/sellers"

        async def post(path: str) -> httpx.Response:
            return await client.post(f"{base}/{path}", data={"csrf_token": csrf})

        # An activated seller's password is reset; an invited one's invitation resent;
        # not the other way round.
        assert (await post(f"{seller_id}/resend")).status_code == 400
        assert (await post(f"{invited_id}/reset-password")).status_code == 400
        r = await post(f"{invited_id}/resend")
        assert r.status_code == 303
        r = await post(f"{seller_id}/reset-password")
        assert r.status_code == 303
        assert await mails(session) == 2
        kinds = (await session.execute(select(MailMessage.kind, MailMessage.recipients))).all()
        await session.rollback()
        assert sorted((k, r[0]) for k, r in kinds) == [
            ("invitation", invited_email),
            ("password_reset", people.emails["seller"]),
        ]
        link = await link_mailed_to(app, session, people.emails["seller"])
        # Blocked: no sign-in, no link, no mail; then active again.
        assert (await post(f"{seller_id}/block")).status_code == 303
        listed = await client.get(base)
        assert "Activate" in listed.text
        r = await post(f"{seller_id}/reset-password")
        assert r.status_code == 400
        assert "blocked" in unescape(r.text)
        assert await mails(session) == 2
        client.cookies.clear()
        await refused_sign_in(client, people.emails["seller"], PASSWORD)
        r = await client.get("/portal/set-password", params={"token": token_in(link)})
        assert r.status_code == 400
        csrf = await sign_in(client, people.emails["reseller"])
        assert (await post(f"{seller_id}/activate")).status_code == 303
        # The old password works until the link sets the new one.
        client.cookies.clear()
        await sign_in(client, people.emails["seller"])
        client.cookies.clear()
        assert (await set_password(client, token_in(link), NEW_PASSWORD)).status_code == 303
        await refused_sign_in(client, people.emails["seller"], PASSWORD)
        await sign_in(client, people.emails["seller"], NEW_PASSWORD)
        client.cookies.clear()
        csrf = await sign_in(client, people.emails["reseller"])
        confirm = await client.get(f"{base}/{seller_id}/delete")
        assert confirm.status_code == 200
        assert (await post(f"{seller_id}/delete")).status_code == 303
        row = await seller_row(session, seller_id)
        assert row.deleted
        account = await session.get(Client, people.client_id)
        assert account is not None and account.seller_id is None
        await session.rollback()
        assert (await post(f"{seller_id}/block")).status_code == 404
        logged = [a for a, _, _ in await actions(session)]
        assert logged == [
            "portal.resend_seller_invitation",
            "portal.reset_seller_password",
            "portal.resend_seller_invitation",
            "portal.reset_seller_password",
            "portal.block_seller",
            "portal.reset_seller_password",
            "portal.activate_seller",
            "portal.set_seller_password",
            "portal.delete_seller",
            "portal.block_seller",
        ]

    async def test_another_resellers_seller_is_the_404_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        csrf = await sign_in(client, people.emails["other_reseller"])
        listed = await client.get("/portal/users/sellers")
        assert people.emails["seller"] not in listed.text
        for action in ("block", "activate", "resend", "reset-password", "delete"):
            r = await client.post(
                f"/portal/users/sellers/{people.seller_id}/{action}", data={"csrf_token": csrf}
            )
            assert r.status_code == 404, action
        assert (
            await client.get(f"/portal/users/sellers/{people.seller_id}/delete")
        ).status_code == 404
        row = await seller_row(session, people.seller_id)
        assert not row.blocked and not row.deleted

    async def test_blocking_and_deleting_end_the_sellers_sessions(
        self, app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        async def seller_sessions() -> int:
            rows = (
                await session.execute(
                    select(func.count())
                    .select_from(PortalSession)
                    .where(PortalSession.seller_id == people.seller_id)
                )
            ).scalar_one()
            await session.rollback()
            return int(rows)

        csrf = await sign_in(client, people.emails["reseller"])
        base = f"/portal/users/sellers/{people.seller_id}"
        for action in ("block", "delete"):
            async with new_client(app) as seller:
                await sign_in(seller, people.emails["seller"])
                assert await seller_sessions() == 1
                r = await client.post(f"{base}/{action}", data={"csrf_token": csrf})
                assert r.status_code == 303
                assert await seller_sessions() == 0
                assert (await seller.get("/portal/")).status_code == 303
            if action == "block":
                assert (
                    await client.post(f"{base}/activate", data={"csrf_token": csrf})
                ).status_code == 303
