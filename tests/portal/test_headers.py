"""docs/portal.md, "Security headers", for every route of the portal, walked from the
application (tests/portal/crawl.py) so that a section added later is covered too: a
Content-Security-Policy of the service's own origin only, `frame-ancestors 'none'`,
`X-Content-Type-Options: nosniff` and a `Referrer-Policy` on every answer: pages,
redirects, refusals (400, 403, 404) and the sign-in page; and no page the signed-in users
reach holds what that policy forbids (an inline script or style, an event attribute)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from tests.portal.crawl import (
    Tenants,
    arrange_tenants,
    header_problems,
    is_page,
    parse,
    portal_routes,
    routes_with,
    signed_in,
    walk,
)
from tests.portal.people import sign_in


@pytest.fixture
async def tenants(session: AsyncSession) -> Tenants:
    return await arrange_tenants(session)


def check(answers: list[tuple[str, httpx.Response]]) -> None:
    bad = {where: p for where, r in answers if (p := header_problems(r))}
    assert bad == {}, bad
    failed = {where: r.status_code for where, r in answers if r.status_code >= 500}
    assert failed == {}, failed


def test_the_check_finds_what_it_looks_for():
    def answer(**headers: str) -> httpx.Response:
        return httpx.Response(200, headers=headers)

    good = {
        "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; img-src 'self'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }
    assert header_problems(answer(**good)) == []
    inline = {
        **good,
        "Content-Security-Policy": good["Content-Security-Policy"] + " 'unsafe-inline'",
    }
    assert header_problems(answer(**inline)) == ["img-src allows [\"'unsafe-inline'\"]"]
    framed = {**good, "Content-Security-Policy": "default-src 'self' https://cdn.example"}
    assert len(header_problems(answer(**framed))) == 3
    assert header_problems(answer()) == ["no Content-Security-Policy"]


class TestEveryRoute:
    async def test_every_get_route_of_a_signed_in_operator(
        self, app: FastAPI, client: httpx.AsyncClient, tenants: Tenants
    ):
        await sign_in(client, tenants.people.emails["operator"])
        answers = []
        for route in routes_with(app, "GET"):
            path = tenants.path(route)
            answers.append((f"GET {path}", await client.get(path)))
        # Another tenant's rows are the 404 page for a reseller: its headers too.
        async with signed_in(app, tenants.people.emails["reseller"]) as (reseller, _):
            for route in routes_with(app, "GET"):
                if route.parameters:
                    path = tenants.path(route, other=True)
                    answers.append((f"GET {path} (reseller)", await reseller.get(path)))
        check(answers)
        statuses = {r.status_code for _, r in answers}
        assert {200, 404} <= statuses, statuses  # pages, and the 404 page

    async def test_every_get_route_without_a_session_redirects_with_the_headers(
        self, app: FastAPI, client: httpx.AsyncClient, tenants: Tenants
    ):
        answers = []
        for route in routes_with(app, "GET"):
            path = tenants.path(route)
            r = await client.get(path)
            answers.append((f"GET {path}", r))
            # The sign-in page, or another page of those before a session (a forgotten
            # password, say): never the navigation of a signed-in user.
            if r.status_code != 303:
                assert 'aria-label="Main"' not in r.text, path
            else:
                assert r.headers["location"].startswith("/portal/sign-in"), path
        check(answers)

    async def test_every_post_route_without_its_token_and_with_an_empty_form(
        self, app: FastAPI, client: httpx.AsyncClient, tenants: Tenants
    ):
        token = await sign_in(client, tenants.people.emails["operator"])
        answers = []
        posts = routes_with(app, "POST")
        # Signing out last: it ends the session the others need.
        posts.sort(key=lambda r: r.name == "sign_out")
        for route in posts:
            path = tenants.path(route)
            refused = await client.post(path, data={"csrf_token": "forged"})
            assert refused.status_code == 403, (path, refused.status_code)
            answers.append((f"POST {path} (no token)", refused))
            if route.name != "sign_in":
                r = await client.post(path, data={"csrf_token": token})
                answers.append((f"POST {path} (empty form)", r))
        # Signed out: a change is sent to the sign-in page, or refused.
        for route in posts:
            path = tenants.path(route)
            answers.append((f"POST {path} (signed out)", await client.post(path, data={})))
        check(answers)
        statuses = {r.status_code for _, r in answers}
        # A refused form, the refusal without a token, redirects after a change.
        assert {303, 400, 403} <= statuses, statuses

    async def test_the_walk_finds_the_routes(self, app: FastAPI):
        names = {r.name for r in portal_routes(app)}
        assert {"sign_in_form", "sign_in", "sign_out", "home"} <= names


class TestRefusals:
    async def test_the_client_users_page_and_a_refused_sign_in(
        self, client: httpx.AsyncClient, tenants: Tenants
    ):
        answers = [
            ("wrong password", await client.post("/portal/sign-in", data={"email": "x"})),
        ]
        await sign_in(client, tenants.people.emails["client"])
        not_here = await client.get("/portal/")
        assert not_here.status_code == 403
        answers.append(("client user's page", not_here))
        check(answers)

    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("GET", "/portal/no-such-page"),
            ("GET", "/portal/sign-out"),
            ("GET", "/portal"),
            ("GET", "/portal/static/no-such-file.css"),
            ("POST", "/portal/no-such-page"),
            ("PUT", "/portal/"),
        ],
    )
    async def test_paths_no_route_answers(
        self, client: httpx.AsyncClient, tenants: Tenants, method: str, path: str
    ):
        await sign_in(client, tenants.people.emails["operator"])
        r = await client.request(method, path)
        check([(f"{method} {path}", r)])
        # The portal's own page (or its way on to /portal/), not the API's JSON.
        assert r.status_code in (303, 307, 308, 404, 405), r.status_code
        if r.status_code >= 400 and "static" not in path:
            assert r.headers["content-type"].startswith("text/html"), r.headers


class TestStaticFiles:
    @pytest.mark.parametrize(
        ("path", "kind"),
        [
            ("/portal/static/portal.css", "text/css"),
            ("/portal/static/vendor/htmx.min.js", "javascript"),
            ("/portal/static/favicon.svg", "image/svg+xml"),
        ],
    )
    async def test_are_served_with_the_headers(
        self, client: httpx.AsyncClient, path: str, kind: str
    ):
        # No route of the portal (its 404 page for paths no page serves) hides them.
        r = await client.get(path)
        assert r.status_code == 200, r.text[:200]
        assert kind in r.headers["content-type"]
        check([(path, r)])


class TestPages:
    @pytest.mark.parametrize("kind", ["operator", "reseller", "seller"])
    async def test_no_page_holds_inline_script_or_style(
        self, client: httpx.AsyncClient, tenants: Tenants, kind: str
    ):
        await sign_in(client, tenants.people.emails[kind])
        visits = await walk(client)
        assert len(visits) > 1
        inline = {v.path: v.parsed.inline for v in visits if v.parsed.inline}
        assert inline == {}, inline
        answers = [(v.path, v.response) for v in visits]
        # The parts htmx swaps in (the same addresses, asked by htmx) are held to it too.
        for visit in visits:
            if not visit.response.is_redirect:
                part = await client.get(visit.path, headers={"HX-Request": "true"})
                answers.append((f"{visit.path} (htmx)", part))
                if is_page(part):
                    found = parse(part.text, str(part.url)).inline
                    assert found == [], (visit.path, found)
        check(answers)
