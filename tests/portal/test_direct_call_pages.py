"""The portal's pages that web/direct_call.py answers without FastAPI's solver (every
page whose dependencies take the request alone) give, for a varied set of requests, the
same bytes as FastAPI's own solver: status, headers and body.

The pages are the portal's own, on a real database, behind the whole application: its
middleware, its route index, the portal's route class and its error pages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import request_response
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.portal import context as portal_context
from cloudadmin.portal.context import PortalRoute
from tests.billing.helpers import addendum_row, at, insert_addendums
from tests.portal.people import People, sign_in

# Who asks what: (who, method, path, headers). "nobody" has no session.
ASKED: list[tuple[str, str, str, dict[str, str]]] = [
    ("operator", "GET", "/portal/", {}),
    ("operator", "GET", "/portal/billing", {}),
    ("operator", "GET", "/portal/billing?ordering=-created_at&limit=5", {}),
    ("operator", "GET", "/portal/billing?limit=5&page=2", {}),
    ("operator", "GET", "/portal/billing?status=gone", {}),
    ("operator", "GET", "/portal/billing?ordering=bogus", {}),
    ("operator", "GET", "/portal/billing?plan_name=Gr%C3%B6%C3%9Fe", {"HX-Request": "true"}),
    ("operator", "GET", "/portal/billing?status=gone", {"HX-Request": "true"}),
    ("operator", "GET", "/portal/billing/chart", {}),
    ("operator", "GET", "/portal/accounts", {}),
    ("operator", "GET", "/portal/users", {}),
    ("operator", "GET", "/portal/events", {}),
    ("reseller", "GET", "/portal/billing", {}),
    ("seller", "GET", "/portal/billing", {}),
    ("client", "GET", "/portal/billing", {}),
    ("nobody", "GET", "/portal/billing?limit=5", {}),
    ("operator", "POST", "/portal/sign-out", {}),  # without the CSRF token: refused
]


def direct_pages(app: FastAPI) -> list[PortalRoute]:
    return [r for r in app.routes if isinstance(r, PortalRoute) and r.calls_directly]


@contextmanager
def through_the_solver(routes: list[PortalRoute]) -> Iterator[None]:
    """``routes`` answered by FastAPI's solver until the block ends: their handlers built
    again (as APIRoute builds them, no body limit) with direct_call declining them."""
    kept = [(route, route.app) for route in routes]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(portal_context, "direct_handler", lambda route, solved: None)
        for route in routes:
            route.app = request_response(route.get_route_handler())
            assert not route.calls_directly
    try:
        yield
    finally:
        for route, app in kept:
            route.app, route.calls_directly = app, True


async def answers(clients: dict[str, httpx.AsyncClient]) -> list[Any]:
    out = []
    for n, (who, method, path, headers) in enumerate(ASKED):
        # Each request names its request id: the same in both runs.
        sent = {**headers, "X-Request-ID": f"compared-{n}"}
        r = await clients[who].request(method, path, headers=sent)
        kept = sorted((k, v) for k, v in r.headers.items() if k != "date")
        out.append((who, path, r.status_code, kept, r.content))
    return out


async def test_the_pages_answer_as_fastapis_solver_does(
    app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, people: People
):
    rows = [
        addendum_row(
            people.client_id,
            status=("active", "stopped", "upcoming")[i % 3],
            plan_name=("Basic", "Größe", "Pro")[i % 3],
            created_at=at(f"2025-01-{1 + i:02d} 10:00"),
            active_start=at(f"2025-01-{1 + i:02d} 00:00"),
            reseller_id=people.reseller_id,
        )
        for i in range(12)
    ]
    await insert_addendums(session, rows)
    transport = client._transport  # the same application, one cookie jar per person
    clients = {"nobody": client}
    for who in ("operator", "reseller", "seller", "client"):
        signed = httpx.AsyncClient(transport=transport, base_url=str(client.base_url))
        await sign_in(signed, people.emails[who])
        clients[who] = signed
    try:
        routes = direct_pages(app)
        assert "/portal/billing" in {route.path for route in routes}
        direct = await answers(clients)
        with through_the_solver(routes):
            solved = await answers(clients)
    finally:
        for who, signed in clients.items():
            if who != "nobody":
                await signed.aclose()
    for by_direct_call, by_solver in zip(direct, solved, strict=True):
        assert by_direct_call == by_solver
    # The set covers what matters: pages, a part, refusals of filters and of people, the
    # sign-in redirect and a forged form.
    assert {status for _, _, status, _, _ in direct} == {200, 303, 400, 403, 404}
