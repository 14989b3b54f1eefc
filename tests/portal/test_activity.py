"""docs/portal.md, "Activity logs", over HTTP on both databases: the API's filters and a
time range, the columns kept per person, one record (another tenant's is the 404 page),
the filtered list as streamed CSV, and what the log keeps of the portal's own requests
(docs/activity-log.md, "Requests of the Admin Portal")."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ActivityLogEntry, PortalPreference, User
from cloudadmin.db.types import utcnow
from cloudadmin.iam.activity_log import service
from tests.factories import auth, make_key
from tests.portal.people import PASSWORD, People, sign_in, token_of

LIST = "/portal/activity"


async def entry(session: AsyncSession, client_id: int, **fields: Any) -> int:
    values: dict[str, Any] = dict(
        actions="update_client",
        data="",
        user_email="someone@example.com",
        client_id=client_id,
        token_id=7,
        user_id=11,
        requested_at=utcnow() - timedelta(minutes=5),
        path="/iam/clients/1",
        remote_ip_address="198.51.100.1",
        host="api.example.com",
        method="PATCH",
        query_params="",
        status_code=200,
        reverted=False,
        request_id="r",
    )
    values.update(fields)
    row = ActivityLogEntry(**values)
    session.add(row)
    await session.commit()
    return row.id


def ids_in(page: str) -> list[int]:
    return [int(found) for found in re.findall(r'href="/portal/activity/(\d+)"', page)]


async def log_rows(session: AsyncSession, **where: Any) -> list[ActivityLogEntry]:
    session.expire_all()
    stmt = select(ActivityLogEntry).filter_by(**where).order_by(ActivityLogEntry.id)
    rows = list((await session.execute(stmt)).scalars())
    session.expunge_all()
    await session.rollback()
    return rows


class TestList:
    async def test_every_filter_of_the_api_and_a_time_range(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        mine = people.reseller_id
        old = await entry(session, mine, requested_at=utcnow() - timedelta(hours=3))
        post = await entry(session, mine, method="POST", path="/iam/clients", status_code=201)
        refused = await entry(session, mine, status_code=404, path="/iam/clients/9")
        other_ip = await entry(session, mine, remote_ip_address="203.0.113.50")
        other_user = await entry(session, mine, user_id=12, token_id=8)
        theirs = await entry(session, people.other_reseller_id, method="POST")
        await sign_in(client, people.emails["reseller"])

        async def shown(**params: str) -> list[int]:
            r = await client.get(LIST, params=params)
            assert r.status_code == 200, r.text
            return [i for i in ids_in(r.text) if i in arranged]  # not the sign-in's row

        arranged = {old, post, refused, other_ip, other_user, theirs}
        everything = [other_user, other_ip, refused, post, old]
        assert await shown() == everything  # newest first; another tenant's never
        assert await shown(method="post") == [post]
        assert await shown(path="/iam/clients") == [post]
        assert await shown(status_code="4") == [refused]
        assert await shown(status_code="20") == [other_user, other_ip, post, old]
        assert await shown(remote_ip_address="203.0.113.50") == [other_ip]
        assert await shown(user_id="12") == [other_user]
        assert await shown(token_id="8") == [other_user]
        assert await shown(range="1h") == [other_user, other_ip, refused, post]
        since = (utcnow() - timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M")
        until = (utcnow() - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
        assert await shown(min_requested_at=since, max_requested_at=until) == [old]
        # client_id narrows, never widens (docs/access.md).
        assert await shown(client_id=str(people.other_reseller_id)) == []
        assert await shown(method="POST") == [post]

    async def test_an_operator_sees_every_account_and_narrows_to_one(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        a = await entry(session, people.reseller_id)
        b = await entry(session, people.other_client_id)
        await sign_in(client, people.emails["operator"])
        r = await client.get(LIST)
        assert {a, b} <= set(ids_in(r.text))
        assert 'id="f-client_id"' in r.text
        r = await client.get(LIST, params={"client_id": str(people.other_client_id)})
        assert ids_in(r.text) == [b]

    async def test_pages_of_25_with_links_that_keep_the_filters(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = [await entry(session, people.reseller_id, method="GET") for _ in range(27)]
        await sign_in(client, people.emails["reseller"])
        first = await client.get(LIST, params={"method": "GET"})
        assert ids_in(first.text) == made[::-1][:25]
        assert "27 requests, 1 to 25 shown." in first.text
        nxt = re.search(r'href="([^"]+)" rel="next"', first.text)
        assert nxt is not None and "method=GET" in nxt.group(1)
        second = await client.get(nxt.group(1).replace("&amp;", "&"))
        assert ids_in(second.text) == made[::-1][25:]

    async def test_bad_filters_are_shown_with_their_messages_and_what_was_typed(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get(
            LIST, params={"status_code": "x9", "min_requested_at": "yesterday", "user_id": "-1"}
        )
        assert r.status_code == 400
        assert "A status code or its first digits: 4, 40 or 404." in r.text
        assert "Enter a valid date/time" in r.text
        assert 'value="x9"' in r.text and 'value="yesterday"' in r.text
        assert 'aria-invalid="true"' in r.text and ids_in(r.text) == []
        both = await client.get(LIST, params={"range": "1h", "min_requested_at": "2026-01-01"})
        assert both.status_code == 400
        assert "Choose a range or a From time, not both." in both.text
        nul = await client.get(LIST, params={"path": "a\x00b"})
        assert nul.status_code == 400 and "cannot be stored" in nul.text

    async def test_htmx_gets_the_results_only_and_a_refusal_loads_the_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        made = await entry(session, people.reseller_id)
        await sign_in(client, people.emails["reseller"])
        hx = {"HX-Request": "true"}
        part = await client.get(LIST, params={"method": "PATCH"}, headers=hx)
        assert part.status_code == 200 and "<h1>" not in part.text
        assert part.text.lstrip().startswith('<div id="activity-results"')
        assert ids_in(part.text) == [made]
        assert 'href="/portal/activity/export.csv?method=PATCH"' in part.text
        # The columns' form goes back to the list as now filtered.
        assert 'name="query" value="method=PATCH"' in part.text
        bad = await client.get(LIST, params={"method": "1"}, headers=hx)
        assert bad.status_code == 400
        assert bad.headers["HX-Redirect"].endswith("/portal/activity?method=1")


class TestColumns:
    async def test_chosen_columns_are_kept_for_the_person(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        await entry(session, people.reseller_id, host="h.example")
        token = await sign_in(client, people.emails["reseller"])
        before = await client.get(LIST)
        assert '<th scope="col">Requested at</th>' in before.text
        assert '<th scope="col">Host</th>' not in before.text
        r = await client.post(
            f"{LIST}/columns",
            data={"csrf_token": token, "columns": ["host", "path"], "query": "method=PATCH"},
        )
        assert r.status_code == 303 and r.headers["location"] == f"{LIST}?method=PATCH"
        after = await client.get(LIST)
        heads = re.findall(r'<th scope="col">([^<]+)</th>', after.text)
        assert heads == ["ID", "Path", "Host"]  # the table's order, not the form's
        assert 'id="col-host" name="columns" type="checkbox" value="host" checked' in after.text
        # Another person keeps the defaults.
        client.cookies.clear()
        await sign_in(client, people.emails["operator"])
        assert '<th scope="col">Requested at</th>' in (await client.get(LIST)).text

    async def test_an_unknown_or_no_column_is_refused_and_nothing_kept(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        token = await sign_in(client, people.emails["reseller"])
        r = await client.post(
            f"{LIST}/columns", data={"csrf_token": token, "columns": ["path", "password"]}
        )
        assert r.status_code == 400 and "An unknown column was chosen." in r.text
        assert 'role="alert"' in r.text and '<details class="log-columns" open>' in r.text
        r = await client.post(f"{LIST}/columns", data={"csrf_token": token, "query": "a=b"})
        assert r.status_code == 400 and "Choose at least one column." in r.text
        r = await client.post(f"{LIST}/columns", data={"columns": ["path"]})  # no CSRF token
        assert r.status_code == 403
        assert list((await session.execute(select(PortalPreference))).scalars()) == []


class TestRecord:
    async def test_one_record_and_another_tenants_is_the_404_page(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        mine = await entry(
            session,
            people.reseller_id,
            data=json.dumps({"name": "Shop", "password": "***"}),
            query_params="verbose=1",
        )
        theirs = await entry(session, people.other_reseller_id)
        await sign_in(client, people.emails["reseller"])
        r = await client.get(f"{LIST}/{mine}")
        assert r.status_code == 200
        assert f"<h1>Request {mine}</h1>" in r.text
        assert "verbose=1" in r.text and "&#34;password&#34;: &#34;***&#34;" in r.text
        for other in (str(theirs), "999999999", "abc", "0", str(2**63)):
            r = await client.get(f"{LIST}/{other}")
            assert r.status_code == 404, other
            assert "There is nothing here, or nothing you may see." in r.text


class TestCsv:
    async def test_the_filtered_list_streamed_in_batches(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        people: People,
        monkeypatch: pytest.MonkeyPatch,
    ):
        monkeypatch.setattr(service, "EXPORT_BATCH", 2)  # five rows: three batches
        made = [
            await entry(session, people.reseller_id, method="PUT", data=f'{{"n": {i}}}')
            for i in range(5)
        ]
        formula = await entry(session, people.reseller_id, method="PUT", user_email="=x@e.com")
        await entry(session, people.reseller_id, method="GET")
        await entry(session, people.other_reseller_id, method="PUT")
        await sign_in(client, people.emails["reseller"])
        r = await client.get(f"{LIST}/export.csv", params={"method": "put"})
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/csv; charset=utf-8"
        assert r.headers["content-disposition"].startswith("attachment; filename*=UTF-8''")
        rows = list(csv.reader(io.StringIO(r.text)))
        assert rows[0] == list(service.EXPORT_HEADER)
        assert rows[0][:4] == ["id", "requested_at", "client_id", "user_id"]
        assert [int(row[0]) for row in rows[1:]] == [formula, *made[::-1]]
        assert rows[1][4] == "'=x@e.com"  # a spreadsheet does not run it
        assert rows[2][-1] == '{"n": 4}' and rows[2][1].endswith("Z")

    async def test_bad_filters_give_the_page_with_messages(
        self, client: httpx.AsyncClient, people: People
    ):
        await sign_in(client, people.emails["reseller"])
        r = await client.get(f"{LIST}/export.csv", params={"status_code": "abc"})
        assert r.status_code == 400 and "A status code or its first digits" in r.text


class TestPortalRequestsInTheLog:
    """docs/activity-log.md, "Requests of the Admin Portal"."""

    async def test_a_change_is_logged_as_the_person_without_a_key_and_reads_are_not(
        self, client: httpx.AsyncClient, session: AsyncSession, people: People
    ):
        form = await client.get("/portal/sign-in")
        wrong = await client.post(
            "/portal/sign-in",
            data={
                "email": people.emails["reseller"],
                "password": "not it",
                "csrf_token": token_of(form.text),
            },
        )
        assert wrong.status_code == 401  # no row, as the API's 401
        token = await sign_in(client, people.emails["reseller"])
        await client.get(LIST)
        await client.get(f"{LIST}/export.csv")
        r = await client.post(
            f"{LIST}/columns?from=form",
            data={"csrf_token": token, "columns": ["path"], "query": ""},
        )
        assert r.status_code == 303
        refused = await client.post(f"{LIST}/columns", data={"csrf_token": token})
        assert refused.status_code == 400
        forged = await client.post(f"{LIST}/columns", data={"columns": "host"})
        assert forged.status_code == 403  # refused before the person is known: no row
        rows = [row for row in await log_rows(session) if row.path.startswith("/portal/")]
        # The sign-in and the two posts; no read of the portal.
        assert [(row.actions, row.method, row.status_code, row.reverted) for row in rows][-2:] == [
            ("portal.save_activity_columns", "POST", 303, False),
            ("portal.save_activity_columns", "POST", 400, True),
        ]
        assert all(row.method == "POST" for row in rows)
        assert len([row for row in rows if row.path == "/portal/activity/columns"]) == 2
        # The sign-in form's password is masked, as every secret of a body.
        [signed_in] = [row for row in rows if row.path == "/portal/sign-in"]  # the right one
        assert signed_in.status_code == 303 and signed_in.actions == "portal.sign_in"
        assert json.loads(signed_in.data)["password"] == "***"
        assert PASSWORD not in signed_in.data
        saved = rows[-2]
        assert saved.token_id is None and saved.user_id == people.user_ids["reseller"]
        assert saved.client_id == people.reseller_id
        assert saved.path == "/portal/activity/columns" and saved.query_params == "from=form"
        assert json.loads(saved.data) == {"csrf_token": "***", "columns": "path", "query": ""}
        assert token not in saved.data
        # The portal shows it as a portal request, with no API key.
        page = await client.get(f"{LIST}/{saved.id}")
        assert "A request of the Admin Portal" in page.text
        assert "<dt>API key</dt><dd>none</dd>" in page.text
        # The API answers it with the token 0 (its field is an integer).
        user = await session.get(User, people.user_ids["reseller"])
        assert user is not None
        key = await make_key(session, user)
        await session.commit()
        r = await client.get(f"/iam/activity_log/requests/{saved.id}", headers=auth(key))
        assert r.status_code == 200
        assert r.json()["token"] == 0 and r.json()["actions"] == "portal.save_activity_columns"


async def test_a_field_sent_several_times_is_logged_with_every_value(
    client: httpx.AsyncClient, people: People, session: AsyncSession
):
    token = await sign_in(client, people.emails["reseller"])
    r = await client.post(
        "/portal/activity/columns",
        data={"csrf_token": token, "columns": ["path", "method", "host"], "query": ""},
    )
    assert r.status_code < 400, r.text
    session.expire_all()
    data = (
        (
            await session.execute(
                select(ActivityLogEntry.data)
                .where(ActivityLogEntry.actions == "portal.save_activity_columns")
                .order_by(ActivityLogEntry.id.desc())
            )
        )
        .scalars()
        .first()
    )
    assert data is not None and json.loads(data)["columns"] == ["path", "method", "host"]
