"""docs/portal.md, "Accounts", over HTTP on both databases: the list's quick filters,
ordering and pages, presets, the CSV, creating, editing and deleting an account through
its forms (refusals redisplayed, nothing written), tenancy (another tenant's id is the
404 page), CSRF, and the activity-log row of each change."""

from __future__ import annotations

import csv
import html
import io
import re
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import ActivityLogEntry, Client, PortalPreference, User, UserActionEvent
from cloudadmin.errors import NotFound, PermissionDenied, ValidationError
from cloudadmin.iam.clients import availability
from cloudadmin.iam.clients import search as accounts_search
from cloudadmin.iam.clients.search import AccountSearch
from cloudadmin.web.app_state import app_state
from tests.factories import make_client, make_key, make_seller
from tests.portal.people import People, sign_in

NEW_PASSWORD = "a long and unusual secret 42"


async def fresh(session: AsyncSession, model: Any, *where: Any) -> list[Any]:
    """Rows as committed now; the read's transaction ends (SQLite's lock)."""
    session.expire_all()
    rows = list((await session.execute(select(model).where(*where))).scalars())
    session.expunge_all()
    await session.rollback()
    return rows


async def count(session: AsyncSession, model: Any, *where: Any) -> int:
    found = (await session.execute(select(func.count()).select_from(model).where(*where))).scalar()
    await session.rollback()
    return int(found or 0)


def ids_in(page: str) -> list[int]:
    """The account ids of the list's rows, in order."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in page else ""
    return [int(i) for i in re.findall(r"<tr>\s*<td>(?:<a [^>]*>)?(\d+)", body)]


async def log_rows(session: AsyncSession, action: str) -> list[ActivityLogEntry]:
    return await fresh(session, ActivityLogEntry, ActivityLogEntry.actions == action)


async def client_of(session: AsyncSession, reseller_id: int, email: str, **fields: Any) -> Client:
    made = await make_client(session, reseller_id=reseller_id, **fields)
    made.email = email
    await session.flush()
    return made


async def arrange_clients(session: AsyncSession, people: People) -> dict[str, int]:
    reseller = await session.get(Client, people.reseller_id)
    assert reseller is not None
    seller = await make_seller(session, reseller, full_name="Sam Seller")
    made = {
        "alpha": await client_of(
            session,
            people.reseller_id,
            "boss@alpha.example",
            company_name="Alpha Works",
            name="Ann Alpha",
            status="trial",
            seller_id=seller.id,
        ),
        "beta": await client_of(
            session,
            people.reseller_id,
            "desk@beta.example",
            company_name="Beta Straße",
            name="Bob Beta",
            status="active",
        ),
        "test": await client_of(
            session,
            people.reseller_id,
            "qa@gamma.example",
            company_name="Gamma Test",
            is_test=True,
        ),
        "gone": await client_of(
            session,
            people.reseller_id,
            "old@delta.example",
            company_name="Delta Gone",
            deleted=True,
        ),
        "formula": await client_of(
            session, people.reseller_id, "f@x.example", company_name="=SUM(A1)"
        ),
    }
    await session.commit()
    out = {key: c.id for key, c in made.items()}
    out["seller"] = seller.id
    return out


class TestList:
    async def test_a_reseller_sees_its_clients_and_the_quick_filters_narrow_them(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = await arrange_clients(session, people)
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/accounts")
        assert r.status_code == 200
        shown = ids_in(r.text)
        # Its clients, not itself, not the other reseller's; test and deleted hidden.
        assert shown == sorted([people.client_id, made["alpha"], made["beta"], made["formula"]])
        assert "Sam Seller" in r.text
        cases = {
            f"id={made['beta']}": [made["beta"]],
            "email=ALPHA.example": [made["alpha"]],
            "name=bob": [made["beta"]],
            "company=strasse": [made["beta"]],  # Unicode case folding, as the API
            "status=trial": [made["alpha"]],
            f"seller={made['seller']}": [made["alpha"]],
            "test=only": [made["test"]],
            "deleted=only": [made["gone"]],
            "company=ET&status=active": [made["beta"]],
            f"id={people.other_client_id}": [],
        }
        for query, expected in cases.items():
            r = await client.get(f"/portal/accounts?{query}")
            assert r.status_code == 200, query
            assert ids_in(r.text) == expected, query
        r = await client.get("/portal/accounts?test=any&deleted=any")
        assert made["test"] in ids_in(r.text) and made["gone"] in ids_in(r.text)

    async def test_the_operator_sees_every_account(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["operator"])
        r = await client.get("/portal/accounts")
        shown = ids_in(r.text)
        for account in (people.client_id, people.other_client_id, people.reseller_id):
            assert account in shown

    async def test_columns_sort_and_pages_go_deep(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = [
            await make_client(
                session, reseller_id=people.reseller_id, company_name=f"Paged {n:02d}"
            )
            for n in range(60)
        ]
        await session.commit()
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/accounts?company=paged&ordering=-companyName")
        assert ids_in(r.text) == [c.id for c in reversed(made)][:25]
        assert "60 accounts, page 1 of 3" in r.text
        assert 'aria-sort="descending"' in r.text
        # The column's link sorts the other way, keeping the filters.
        assert "ordering=companyName" in r.text and "company=paged" in r.text
        r = await client.get("/portal/accounts?company=paged&ordering=-companyName&page=3")
        assert ids_in(r.text) == [c.id for c in reversed(made)][50:]
        assert 'rel="prev"' in r.text and 'rel="next"' not in r.text
        # Past the end: the last page.
        r = await client.get("/portal/accounts?company=paged&page=999")
        assert ids_in(r.text) == [c.id for c in made][50:]
        # htmx swaps no refusal in: a bad filter loads the whole page.
        r = await client.get("/portal/accounts?id=x&company=paged", headers={"HX-Request": "true"})
        assert r.status_code == 400
        assert r.headers["HX-Redirect"] == "/portal/accounts?id=x&company=paged"
        # htmx asks for the table alone.
        r = await client.get("/portal/accounts?company=paged", headers={"HX-Request": "true"})
        assert r.text.lstrip().startswith('<div id="results"') and "<h1>" not in r.text

    @pytest.mark.parametrize(
        ("query", "field", "kept"),
        [
            ("id=abc", "id", "abc"),
            ("status=sleeping", "status", ""),
            ("page=0", "page", None),
            ("ordering=password", "ordering", None),
            (f"company={'x' * 256}", "company", "x" * 256),
        ],
    )
    async def test_bad_filters_show_the_fields_message(
        self, client: httpx.AsyncClient, people: People, query: str, field: str, kept: str | None
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get(f"/portal/accounts?{query}")
        assert r.status_code == 400
        assert "The form was not accepted" in r.text
        if kept is not None:
            assert f'id="e-{field}"' in r.text
            assert f'value="{kept}"' in r.text or f'"{kept}" selected' in r.text or not kept

    async def test_a_client_user_gets_the_not_here_page(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["client"])
        r = await client.get("/portal/accounts")
        assert r.status_code == 403
        assert "Company" not in r.text


class TestSeller:
    async def test_a_seller_sees_its_assigned_clients_and_changes_nothing(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = await arrange_clients(session, people)  # "alpha": another seller's client
        token = await sign_in(client, people.emails["seller"])
        r = await client.get("/portal/accounts")
        assert r.status_code == 200
        assert ids_in(r.text) == [people.client_id]
        assert "Add new account" not in r.text
        r = await client.get("/portal/accounts/export.csv")
        assert [int(row[0]) for row in list(csv.reader(io.StringIO(r.text)))[1:]] == [
            people.client_id
        ]
        r = await client.get(f"/portal/accounts/{people.client_id}")
        assert r.status_code == 200 and "/edit" not in r.text
        for other in (made["alpha"], people.other_client_id, people.reseller_id):
            assert (await client.get(f"/portal/accounts/{other}")).status_code == 404
        for path in ("/new", f"/{people.client_id}/edit", f"/{people.client_id}/delete"):
            assert (await client.get(f"/portal/accounts{path}")).status_code == 403, path
        before = await count(session, Client)
        r = await client.post("/portal/accounts/new", data=create_form(token))
        assert r.status_code == 403
        r = await client.post(
            f"/portal/accounts/{people.client_id}/edit",
            data={"csrf_token": token, "companyName": "Seller was here"},
        )
        assert r.status_code == 403
        r = await client.post(
            f"/portal/accounts/{people.client_id}/delete", data={"csrf_token": token}
        )
        assert r.status_code == 403
        assert await count(session, Client) == before
        (row,) = await fresh(session, Client, Client.id == people.client_id)
        assert not row.deleted and row.company_name != "Seller was here"


class TestCsv:
    async def test_the_filtered_list_every_page_in_order(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = await arrange_clients(session, people)
        await sign_in(client, people.emails["reseller"])
        r = await client.get("/portal/accounts/export.csv?ordering=-companyName")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/csv")
        assert "attachment" in r.headers["content-disposition"]
        rows = list(csv.reader(io.StringIO(r.text)))
        assert rows[0][:5] == ["id", "email", "name", "companyName", "status"]
        ids = [int(row[0]) for row in rows[1:]]
        companies = [row[3] for row in rows[1:]]
        assert set(ids) == {people.client_id, made["alpha"], made["beta"], made["formula"]}
        assert companies[-1] == "'=SUM(A1)"  # a formula is written as text
        assert [c.lstrip("'") for c in companies] == sorted(
            (c.lstrip("'") for c in companies), reverse=True
        )
        beta = next(row for row in rows[1:] if int(row[0]) == made["beta"])
        assert beta[1:6] == ["desk@beta.example", "Bob Beta", "Beta Straße", "active", ""]
        r = await client.get("/portal/accounts/export.csv?name=ann")
        rows = list(csv.reader(io.StringIO(r.text)))
        assert [int(row[0]) for row in rows[1:]] == [made["alpha"]]
        assert rows[1][5] == str(made["seller"])
        r = await client.get("/portal/accounts/export.csv?id=x")
        assert r.status_code == 400

    async def test_the_operators_csv_has_every_account(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["operator"])
        r = await client.get("/portal/accounts/export.csv")
        ids = {int(row[0]) for row in list(csv.reader(io.StringIO(r.text)))[1:]}
        assert {people.client_id, people.other_client_id, people.reseller_id} <= ids


class TestPresets:
    async def test_save_apply_replace_and_delete(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await arrange_clients(session, people)
        token = await sign_in(client, people.emails["reseller"])
        r = await client.post(
            "/portal/accounts/presets",
            data={"csrf_token": token, "preset_name": "Trials", "status": "trial", "name": ""},
        )
        assert r.status_code == 303
        assert r.headers["location"] == "/portal/accounts?status=trial&notice=preset-saved"
        page = (await client.get("/portal/accounts")).text
        assert '<a href="/portal/accounts?status=trial">Trials</a>' in page
        # The same name replaces it.
        await client.post(
            "/portal/accounts/presets",
            data={"csrf_token": token, "preset_name": "Trials", "status": "trial", "test": "any"},
        )
        rows = await fresh(session, PortalPreference)
        assert [(r.principal, r.name) for r in rows] == [
            (f"user:{people.user_ids['reseller']}", "accounts.presets")
        ]
        assert rows[0].value == [{"name": "Trials", "filters": {"status": "trial", "test": "any"}}]
        # Another person does not see it.
        async with httpx.AsyncClient(transport=client._transport, base_url=client.base_url) as op:
            await sign_in(op, people.emails["operator"])
            assert "Trials" not in (await op.get("/portal/accounts")).text
        r = await client.post(
            "/portal/accounts/presets/delete", data={"csrf_token": token, "preset_name": "Trials"}
        )
        assert r.status_code == 303
        assert (await fresh(session, PortalPreference))[0].value == []
        logged = await log_rows(session, "portal.save_accounts_preset")
        assert len(logged) == 2 and logged[0].token_id is None

    async def test_a_name_is_required_bounded_and_presets_are_few(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        for name, message in [("", "Give the preset a name."), ("x" * 61, "At most 60")]:
            r = await client.post(
                "/portal/accounts/presets",
                data={"csrf_token": token, "preset_name": name, "company": "kept"},
            )
            assert r.status_code == 400
            assert message in r.text and 'value="kept"' in r.text
        for n in range(20):
            r = await client.post(
                "/portal/accounts/presets",
                data={"csrf_token": token, "preset_name": f"p{n}", "company": str(n)},
            )
            assert r.status_code == 303
        r = await client.post(
            "/portal/accounts/presets", data={"csrf_token": token, "preset_name": "one more"}
        )
        assert r.status_code == 400 and "At most 20 presets" in r.text
        r = await client.post(
            "/portal/accounts/presets", data={"csrf_token": token, "preset_name": "p3"}
        )
        assert r.status_code == 303  # replacing one is fine
        value = (await fresh(session, PortalPreference))[0].value
        assert len(value) == 20 and value[-1] == {"name": "p3", "filters": {}}


def create_form(token: str, **fields: str) -> dict[str, str]:
    return {
        "csrf_token": token,
        "email": "first@newco.example",
        "password": NEW_PASSWORD,
        "company": "NewCo",
        "name": "Nora New",
        "lang": "en",
        **fields,
    }


class TestCreate:
    async def test_a_reseller_creates_a_client_with_its_first_user(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        form = (await client.get("/portal/accounts/new")).text
        assert 'name="reseller"' not in form  # only an operator names the reseller
        r = await client.post(
            "/portal/accounts/new",
            data=create_form(
                token,
                custom_id="C-1",
                seller=str(people.seller_id),
                is_test="true",
                product_CDN="false",
                product_DNS="true",
            ),
        )
        assert r.status_code == 303, r.text
        (account,) = await fresh(session, Client, Client.company_name == "NewCo")
        assert r.headers["location"] == f"/portal/accounts/{account.id}?notice=created"
        assert account.reseller_id == people.reseller_id and account.seller_id == people.seller_id
        assert account.is_test and account.custom_id == "C-1"
        assert account.service_availability == {"CDN": False, "DNS": True}
        assert "CDN" not in account.capabilities
        (user,) = await fresh(session, User, User.client_id == account.id)
        assert user.email == "first@newco.example" and user.password_hash
        (row,) = await log_rows(session, "portal.create_account")
        assert row.user_id == people.user_ids["reseller"] and row.token_id is None
        assert row.status_code == 303 and not row.reverted
        assert NEW_PASSWORD not in row.data
        page = await client.get(r.headers["location"])
        assert "The account was created." in page.text and "first@newco.example" in page.text

    @pytest.mark.parametrize(
        ("fields", "field", "message"),
        [
            ({"password": "12345678"}, "password", "numeric"),
            ({"email": "not an e-mail"}, "email", "email"),
            ({"company": "  "}, "company", "at least 1"),
            ({"country_code": "XYZ"}, "country_code", "at most 2"),
            ({"product_CDN": "maybe"}, "product_CDN", "Choose one"),
            ({"seller": "999999"}, "seller", "Not one of the reseller's sellers."),
        ],
    )
    async def test_bad_input_is_redisplayed_and_nothing_is_written(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        fields: dict[str, str],
        field: str,
        message: str,
    ):
        token = await sign_in(client, people.emails["reseller"])
        before = await count(session, Client)
        r = await client.post("/portal/accounts/new", data=create_form(token, **fields))
        assert r.status_code == 400
        error = re.search(rf'<p class="field-error" id="e-{field}">([^<]*)</p>', r.text)
        assert error and message.lower() in html.unescape(error.group(1)).lower(), r.text
        assert 'value="Nora New"' in r.text  # what was typed is kept
        assert NEW_PASSWORD not in r.text  # but never the password
        assert await count(session, Client) == before
        (row,) = await log_rows(session, "portal.create_account")
        assert row.reverted and row.status_code == 400

    async def test_a_taken_company_or_email(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        taken = (await fresh(session, Client, Client.id == people.client_id))[0]
        r = await client.post(
            "/portal/accounts/new", data=create_form(token, company=taken.company_name.upper())
        )
        assert r.status_code == 400 and "Company with this name already exists" in r.text
        r = await client.post(
            "/portal/accounts/new", data=create_form(token, email=people.emails["client"])
        )
        assert r.status_code == 400 and "user with this email already exists." in r.text

    async def test_an_operator_names_the_reseller(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["operator"])
        r = await client.post("/portal/accounts/new", data=create_form(token))
        assert r.status_code == 400 and 'id="e-reseller"' in r.text
        r = await client.post(
            "/portal/accounts/new",
            data=create_form(token, reseller=str(people.other_reseller_id)),
        )
        assert r.status_code == 303
        (account,) = await fresh(session, Client, Client.company_name == "NewCo")
        assert account.reseller_id == people.other_reseller_id

    async def test_without_the_csrf_token_nothing_is_written(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        before = await count(session, Client)
        form = create_form("")
        del form["csrf_token"]
        r = await client.post("/portal/accounts/new", data=form)
        assert r.status_code == 403
        assert await count(session, Client) == before
        r = await client.post(f"/portal/accounts/{people.client_id}/delete", data={})
        assert r.status_code == 403
        assert not (await fresh(session, Client, Client.id == people.client_id))[0].deleted


class TestAccount:
    async def test_its_page_shows_users_tokens_without_secrets_and_the_addendums_link(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        user = (await fresh(session, User, User.id == people.user_ids["client"]))[0]
        key = await make_key(session, user, secret="never-shown-secret")
        await session.commit()
        await sign_in(client, people.emails["reseller"])
        r = await client.get(f"/portal/accounts/{people.client_id}")
        assert r.status_code == 200
        assert people.emails["client"] in r.text
        assert f"<td>{key.split('_')[0]}</td>" in r.text
        assert "never-shown-secret" not in r.text
        assert f'href="/portal/billing?client_id={people.client_id}"' in r.text

    async def test_another_tenants_account_is_the_404_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        other = people.other_client_id
        for path in (f"/{other}", f"/{other}/edit", f"/{other}/delete", "/0", "/x", "/2147483648"):
            r = await client.get(f"/portal/accounts{path}")
            assert r.status_code == 404, path
            assert "There is nothing here" in r.text
        r = await client.post(
            f"/portal/accounts/{other}/edit", data={"csrf_token": token, "companyName": "Mine"}
        )
        assert r.status_code == 404
        r = await client.post(f"/portal/accounts/{other}/delete", data={"csrf_token": token})
        assert r.status_code == 404
        (row,) = await fresh(session, Client, Client.id == other)
        assert not row.deleted and row.company_name != "Mine"

    async def test_edit_changes_what_the_form_changes(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        page = (await client.get(f"/portal/accounts/{people.client_id}/edit")).text
        (before,) = await fresh(session, Client, Client.id == people.client_id)
        assert f'value="{before.company_name}"' in page
        r = await client.post(
            f"/portal/accounts/{people.client_id}/edit",
            data={
                "csrf_token": token,
                "companyName": "Renamed Ltd",
                "email": "billing@renamed.example",
                "custom_id": "R-7",
                "name": "",
                "phone": "",
                "seller": "",
                "is_test": "true",
                "product_STORAGE": "false",
            },
        )
        assert r.status_code == 303, r.text
        assert r.headers["location"] == f"/portal/accounts/{people.client_id}?notice=saved"
        (after,) = await fresh(session, Client, Client.id == people.client_id)
        assert after.company_name == "Renamed Ltd" and after.email == "billing@renamed.example"
        assert after.custom_id == "R-7" and after.is_test and after.seller_id is None
        assert after.service_availability == {"STORAGE": False}
        assert "STORAGE" not in after.capabilities
        assert after.service_statuses["STORAGE"]["enabled"] is False
        (row,) = await log_rows(session, "portal.update_account")
        assert row.user_id == people.user_ids["reseller"] and row.token_id is None
        assert row.path == f"/portal/accounts/{people.client_id}/edit"
        # The form shows what is stored now, and saving it unchanged writes nothing.
        page = (await client.get(f"/portal/accounts/{people.client_id}/edit")).text
        assert 'value="Renamed Ltd"' in page and 'value="false" selected' in page

    @pytest.mark.parametrize(
        ("fields", "field", "message"),
        [
            ({"companyName": ""}, "companyName", "at least 1"),
            ({"email": "nope"}, "email", "email"),
            ({"seller": "999999"}, "seller", "Not one of the reseller's sellers."),
            ({"custom_id": "c" * 256}, "custom_id", "at most 255"),
            ({"product_DNS": "x"}, "product_DNS", "Choose one"),
        ],
    )
    async def test_bad_edits_are_redisplayed_and_nothing_is_written(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        fields: dict[str, str],
        field: str,
        message: str,
    ):
        token = await sign_in(client, people.emails["reseller"])
        (before,) = await fresh(session, Client, Client.id == people.client_id)
        data = {
            "csrf_token": token,
            "companyName": "Half Changed",
            "email": before.email,
            "product_CDN": "false",
            **fields,
        }
        r = await client.post(f"/portal/accounts/{people.client_id}/edit", data=data)
        assert r.status_code == 400
        error = re.search(rf'<p class="field-error" id="e-{field}">([^<]*)</p>', r.text)
        assert error and message.lower() in html.unescape(error.group(1)).lower(), r.text
        (after,) = await fresh(session, Client, Client.id == people.client_id)
        assert after.company_name == before.company_name
        assert after.service_availability == before.service_availability

    async def test_an_operator_deletes_an_account(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["operator"])
        page = await client.get(f"/portal/accounts/{people.other_client_id}/delete")
        assert page.status_code == 200 and "Delete the account" in page.text
        r = await client.post(
            f"/portal/accounts/{people.other_client_id}/delete", data={"csrf_token": token}
        )
        assert r.status_code == 303 and r.headers["location"] == "/portal/accounts?notice=deleted"
        (row,) = await fresh(session, Client, Client.id == people.other_client_id)
        assert row.deleted
        (logged,) = await log_rows(session, "portal.delete_account")
        assert logged.user_id == people.user_ids["operator"] and logged.token_id is None
        r = await client.get(f"/portal/accounts/{people.other_client_id}")
        assert r.status_code == 404
        r = await client.post(
            f"/portal/accounts/{people.other_client_id}/delete", data={"csrf_token": token}
        )
        assert r.status_code == 404

    async def test_a_reseller_may_not_delete_itself(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        r = await client.post(
            f"/portal/accounts/{people.reseller_id}/delete", data={"csrf_token": token}
        )
        assert r.status_code == 403
        (row,) = await fresh(session, Client, Client.id == people.reseller_id)
        assert not row.deleted


async def test_the_search_keeps_only_the_filters_that_narrow():
    search = AccountSearch.model_validate(
        {"id": "", "email": " a@b ", "test": "hide", "deleted": "any", "x": "1"}
    )
    assert search.filters() == {"email": "a@b", "deleted": "any"}


def caller(account_id: int, *, account_type: str = "reseller", superuser: bool = False) -> Caller:
    return Caller(
        user_id=1,
        user_email="someone@example.com",
        superuser=superuser,
        group_ids=frozenset({1}),
        key_id=None,
        account_id=account_id,
        account_type=account_type,
        account_reseller_id=None,
    )


def actor(of: Caller) -> Actor:
    return Actor(caller=of, source_ip="203.0.113.7", user_agent="test", request_id="r")


class TestServices:
    """The service functions the section added (iam/clients/search.py, availability.py)."""

    async def test_the_export_streams_the_search_in_order_within_the_tenancy(
        self, app: Any, session: AsyncSession, people: People
    ):
        made = await arrange_clients(session, people)
        many = [
            await make_client(session, reseller_id=people.reseller_id, company_name=f"Bulk {n:04d}")
            for n in range(accounts_search.EXPORT_CHUNK + 5)
        ]
        await session.commit()
        reseller = caller(people.reseller_id)
        engine = app_state(app).read_engine

        async def export(who: Caller, search: AccountSearch) -> list[tuple[Any, ...]]:
            async with engine.connect() as conn:
                return [row async for row in accounts_search.export_rows(conn, who, search)]

        found = await export(reseller, AccountSearch(company="bulk", ordering="-companyName"))
        assert [row[0] for row in found] == [c.id for c in reversed(many)]
        assert found[0][:5] == (many[-1].id, many[-1].email, None, many[-1].company_name, "active")
        found = await export(reseller, AccountSearch(email="BETA.example", deleted="any"))
        assert [row[0] for row in found] == [made["beta"]]
        # The operator sees every account; another reseller none of these.
        everyone = await export(caller(1, superuser=True), AccountSearch(company="bulk"))
        assert len(everyone) == len(many)
        assert await export(caller(people.other_reseller_id), AccountSearch(company="bulk")) == []
        with pytest.raises(PermissionDenied):
            await export(caller(people.client_id, account_type="common"), AccountSearch())
        # A download stopped early gives its connection back (a cursor in a transaction
        # on PostgreSQL), in autocommit again.
        async with engine.connect() as conn:
            rows = accounts_search.export_rows(conn, reseller, AccountSearch())
            assert (await anext(rows))[0] == people.client_id
            await rows.aclose()
        page = await accounts_search.search_page(
            session, reseller, AccountSearch(company="bulk", page=3), size=500
        )
        assert (page.count, page.page, page.pages) == (len(many), 3, 3)
        assert [a.id for a in page.accounts] == [c.id for c in many[1000:]]
        await session.rollback()

    async def test_availability_follows_patchs_privileged_rules(
        self, session: AsyncSession, people: People
    ):
        reseller = caller(people.reseller_id)
        client_id = people.client_id
        out = await availability.set_availability(
            session, actor(reseller), client_id, {"CDN": False, "DNS": True}
        )
        assert "CDN" not in out.capabilities and "DNS" in out.capabilities
        assert out.serviceStatuses.CDN.enabled is False
        assert await availability.personal(session, reseller, client_id) == {
            "CDN": False,
            "DNS": True,
        }
        # None: the reseller's default again; unchanged: no second event.
        await availability.set_availability(session, actor(reseller), client_id, {"CDN": None})
        await availability.set_availability(session, actor(reseller), client_id, {"CDN": None})
        assert await availability.personal(session, reseller, client_id) == {"DNS": True}
        events = (
            (
                await session.execute(
                    select(UserActionEvent).where(UserActionEvent.client_id == client_id)
                )
            )
            .scalars()
            .all()
        )
        assert [(e.action_type, e.api_group) for e in events] == [("update", "client")] * 2
        operator = caller(people.operator_account_id, account_type="common", superuser=True)
        await availability.set_availability(session, actor(operator), client_id, {"CLOUD": False})
        with pytest.raises(NotFound):
            await availability.set_availability(
                session, actor(reseller), people.other_client_id, {"CDN": False}
            )
        with pytest.raises(NotFound):
            await availability.personal(session, reseller, people.other_client_id)
        with pytest.raises(PermissionDenied):
            await availability.set_availability(
                session, actor(reseller), people.reseller_id, {"CDN": False}
            )
        admin = caller(client_id, account_type="common")
        with pytest.raises(PermissionDenied):
            await availability.set_availability(session, actor(admin), client_id, {"CDN": False})
        with pytest.raises(ValidationError):
            await availability.set_availability(session, actor(reseller), client_id, {"FTP": True})
        await session.rollback()
