"""Two rules of docs/portal.md ("A page's request") on every route of the portal, walked
from the application (tests/portal/crawl.py), so that a section added later is held to
them without being named:

- CSRF: a state-changing request without the session's token is refused (403) and
  writes nothing, not a row of any table (the activity log and the session's last use
  included);
- tenancy: a reseller who types the other reseller's ids (its client, user, seller, the
  reseller itself) into any page's address gets the 404 page and none of its data; a
  change sent there writes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.base import Base
from cloudadmin.db.models import Client, User
from tests.portal.crawl import (
    NO_SUCH_ID,
    Route,
    Tenants,
    arrange_tenants,
    is_page,
    known_kind,
    markup_problems,
    new_client,
    routes_with,
    signed_in,
    walk,
)

# What a change form might hold when the test knows nothing of it.
SOME_FORM = {"name": "Changed", "email": "changed@example.com", "confirm": "true"}


@pytest.fixture
async def tenants(session: AsyncSession) -> Tenants:
    return await arrange_tenants(session)


async def snapshot(session: AsyncSession, *, but: frozenset[str] = frozenset()) -> Any:
    """Every row of every table (but those named), in a stable order; the read's
    transaction ends (on SQLite it would hold the lock the app's requests need)."""
    rows = {}
    for table in Base.metadata.sorted_tables:
        if table.name not in but:
            found = (await session.execute(select(table))).all()
            rows[table.name] = sorted((tuple(r) for r in found), key=repr)
    await session.rollback()
    return rows


def changed(before: Any, after: Any) -> list[str]:
    return [name for name in before if before[name] != after.get(name)]


class TestCsrf:
    async def test_no_post_route_changes_anything_without_the_sessions_token(
        self, app: FastAPI, session: AsyncSession, tenants: Tenants
    ):
        posts = routes_with(app, "POST")
        assert {r.name for r in posts} >= {"sign_in", "sign_out"}
        # Every table is read before and after the whole walk (not around each post: that
        # was most of the walk's time); a change is named by table, the answers by post.
        refusals: dict[str, Any] = {}
        async with signed_in(app, tenants.people.emails["operator"]) as (client, token):
            before_walk = await snapshot(session)
            for route in posts:
                path = tenants.path(route)
                for attempt, data, headers in [
                    ("no token", SOME_FORM, {}),
                    ("a forged token", {**SOME_FORM, "csrf_token": token[:-2] + "xx"}, {}),
                    ("a forged header", SOME_FORM, {"X-CSRF-Token": "forged"}),
                    ("a token in the query", SOME_FORM, {}),
                ]:
                    url = path + (f"?csrf_token={token}" if attempt.endswith("query") else "")
                    r = await client.post(url, data=data, headers=headers)
                    if r.status_code != 403:
                        refusals[f"POST {path} with {attempt}"] = r.status_code
            after = await snapshot(session)
            # The session still works: the refusals ended nothing.
            assert (await client.get("/portal/")).status_code == 200
        assert refusals == {}, refusals
        assert changed(before_walk, after) == [], changed(before_walk, after)

    async def test_signed_out_no_post_route_changes_anything_without_a_token(
        self, app: FastAPI, session: AsyncSession, tenants: Tenants
    ):
        # The pages before a session (sign-in, a forgotten password, a set-password
        # link) carry a token of their own (double submit); the others send the browser
        # to the sign-in page. Either way nothing is written.
        found: dict[str, Any] = {}
        async with new_client(app, "198.51.100.60") as client:
            for route in routes_with(app, "POST"):
                path = tenants.path(route)
                await client.get(path.rsplit("/", 1)[0] or "/portal/")  # any cookie it sets
                before = await snapshot(session)
                r = await client.post(path, data={**SOME_FORM, "csrf_token": "forged"})
                after = await snapshot(session)
                to_sign_in = r.status_code == 303 and r.headers["location"].startswith(
                    "/portal/sign-in"
                )
                if not (r.status_code == 403 or to_sign_in) or changed(before, after):
                    found[f"POST {path}"] = (r.status_code, changed(before, after))
        assert found == {}, found

    async def test_the_token_of_another_session_is_refused(
        self, app: FastAPI, session: AsyncSession, tenants: Tenants
    ):
        emails = tenants.people.emails
        async with (
            signed_in(app, emails["operator"]) as (client, _),
            signed_in(app, emails["reseller"]) as (_, other_token),
        ):
            before = await snapshot(session)
            statuses = {}
            for route in routes_with(app, "POST"):
                if route.name in ("sign_in",):
                    continue
                path = tenants.path(route)
                r = await client.post(path, data={**SOME_FORM, "csrf_token": other_token})
                statuses[path] = r.status_code
            after = await snapshot(session)
        assert {path: s for path, s in statuses.items() if s != 403} == {}
        assert changed(before, after) == []


class TestMarkup:
    """docs/portal.md, "Accessibility", read without a browser (cheaper than axe, and
    the rules axe does not hold: a scope on every table header)."""

    @pytest.mark.parametrize("kind", ["operator", "reseller", "seller"])
    async def test_every_page_a_kind_reaches(self, app: FastAPI, tenants: Tenants, kind: str):
        async with signed_in(app, tenants.people.emails[kind]) as (client, _):
            visits = await walk(client)
        pages = [v for v in visits if is_page(v.response)]
        assert len(pages) > 1
        found = {v.path: p for v in pages if (p := markup_problems(v.response.text))}
        assert found == {}, found

    async def test_the_pages_before_a_session(self, app: FastAPI):
        async with new_client(app) as client:
            for path in ("/portal/sign-in", "/portal/no-such-page"):
                r = await client.get(path)
                assert markup_problems(r.text) == [], path

    def test_the_check_finds_what_it_looks_for(self):
        page = (
            "<h1>A</h1><h1>B</h1><table><tr><th>x</th></tr></table>"
            "<input name=q><label for=e>E</label><input id=e name=e>"
            "<label>F <input name=f></label><button></button><button aria-label=Go></button>"
        )
        assert markup_problems(page) == [
            "<th> without scope: {}",
            "<button> without text",
            "2 <h1> elements, not one",
            "<input name='q' id=None> without a label",
        ]


def id_routes(app: FastAPI, method: str) -> list[Route]:
    return [r for r in routes_with(app, method) if r.parameters]


class TestTenancy:
    @pytest.mark.parametrize("kind", ["reseller", "seller"])
    async def test_every_page_with_another_tenants_id_is_the_404_page(
        self, app: FastAPI, session: AsyncSession, tenants: Tenants, kind: str
    ):
        routes = id_routes(app, "GET")
        if not routes:
            pytest.skip("no page of the portal takes an id yet")
        people = tenants.people
        other_client = await session.get(Client, people.other_client_id)
        other_user = await session.get(User, people.user_ids["other_reseller"])
        assert other_client is not None and other_user is not None
        secrets = [other_client.email, other_user.email, other_client.company_name]
        await session.rollback()
        shown: dict[str, Any] = {}
        own_seen = []
        async with signed_in(app, people.emails[kind]) as (client, _):
            assert f"({kind})" in (await client.get("/portal/")).text
            for route in routes:
                path = tenants.path(route, other=True)
                r = await client.get(path)
                leaked = [s for s in secrets if s and s in r.text]
                if r.status_code != 404 or "Not found" not in r.text or leaked:
                    shown[path] = (r.status_code, leaked)
                if all(known_kind(p) for p in route.parameters):
                    mine = await client.get(tenants.path(route))
                    own_seen.append((route.path, mine.status_code))
        assert shown == {}, shown
        # The ids are the rows the pages are about: with the reseller's own, some page
        # shows what the other's refused (else the test above could not fail).
        if own_seen and kind == "reseller":  # a seller sees few pages of its own
            assert any(status == 200 for _, status in own_seen), own_seen

    async def test_no_change_reaches_another_tenants_rows(
        self, app: FastAPI, session: AsyncSession, tenants: Tenants
    ):
        routes = id_routes(app, "POST")
        if not routes:
            pytest.skip("no change of the portal takes an id yet")
        written: dict[str, Any] = {}
        async with signed_in(app, tenants.people.emails["reseller"]) as (client, token):
            for route in routes:
                path = tenants.path(route, other=True)
                # The refusal is in the activity log (reverted); nothing else may change.
                before = await snapshot(session, but=frozenset({"activity_log"}))
                r = await client.post(path, data={**SOME_FORM, "csrf_token": token})
                after = await snapshot(session, but=frozenset({"activity_log"}))
                # A form refused before the row is looked up is a 400; never a success.
                if r.status_code not in (400, 404) or changed(before, after):
                    written[path] = (r.status_code, changed(before, after))
        assert written == {}, written

    def test_unknown_kinds_get_an_id_no_row_has(self, tenants: Tenants):
        assert tenants.id_of("listener_id", other=True) == NO_SUCH_ID
        assert tenants.id_of("client_id", other=True) == tenants.people.other_client_id
        assert tenants.id_of("reseller_id") == tenants.people.reseller_id
        assert tenants.id_of("seller_id", other=True) == tenants.other_seller_id
        own, others = tenants.rows["setting"]
        assert (
            tenants.id_of("setting_id") == own != others == tenants.id_of("setting_id", other=True)
        )


def test_every_browser_module_of_the_portal_is_marked_slow():
    # Under pytest-xdist the slow tests go out a module at a time (tests/scheduling.py),
    # so that a module's browser and servers start once in one worker.
    import ast
    from pathlib import Path

    browser_fixtures = {"page", "browser", "portal", "chromium"}
    unmarked = []
    modules = sorted(Path(__file__).parent.glob("test_*.py"))
    for path in modules:
        tree = ast.parse(path.read_text())
        uses = any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test_")
            and browser_fixtures & {a.arg for a in node.args.args}
            for node in ast.walk(tree)
        )
        marked = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            and "slow" in ast.unparse(node.value)
            for node in tree.body
        )
        if uses and not marked:
            unmarked.append(path.name)
    assert len(modules) > 5
    assert unmarked == [], f"browser tests without pytestmark = pytest.mark.slow: {unmarked}"


def test_scripts_test_installs_the_browser_the_portals_tests_drive():
    # CI runs scripts/test on a fresh machine: Debian's Chromium and its driver must be
    # installed by it, or every browser test fails under CI=true.
    from pathlib import Path

    script = (Path(__file__).parents[2] / "scripts" / "test").read_text()
    assert "command -v chromium >/dev/null || need+=(chromium)" in script
    assert "command -v chromedriver >/dev/null || need+=(chromium-driver)" in script
    assert 'apt-get install -y -qq "${need[@]}"' in script
