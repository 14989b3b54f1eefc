"""Every route web/direct_call.py answers without FastAPI's solver gives, for each request
of a varied set, the same bytes as FastAPI's own solver: status, headers and body.

The routes are the service's own (whichever qualify today), on a real database, behind
the whole application: its middleware, its route index and its error pages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import request_response
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.web import route as web_route
from cloudadmin.web.route import ApiRoute
from tests.billing.helpers import addendum_row, at, insert_addendums
from tests.factories import Landscape, auth, landscape, make_client

ADDENDUMS = "/billing/org/v1/addendums"
CLIENTS = "/iam/clients"

# The one header that tells one answer from the next whoever computes it. (Each request
# names its own request id, which error bodies quote: the same in both runs.)
PER_ANSWER = {"date"}

# Who asks: the landscape's keys by name, no key, and a key nobody holds.
NO_KEY, WRONG_KEY = "nobody", "wrong"

# (who, params) per route: filters, ordering, pages, refused parameters, other tenants.
ASKED: dict[str, list[tuple[str, Any]]] = {
    ADDENDUMS: [
        ("operator", {}),
        ("operator", {"limit": 2}),
        ("operator", {"limit": 2, "offset": 2}),
        ("operator", {"ordering": "-created_at"}),
        ("operator", {"ordering": ["plan_name", "-id"]}),
        ("operator", {"ordering": "bogus"}),
        ("operator", {"status": ["active", "stopped"]}),
        ("operator", {"product_internal_name": "cdn"}),
        ("operator", {"currency_char_code": "EUR", "ordering": "-active_range_start"}),
        ("operator", {"active_at": "2025-01-15T00:00:00Z"}),
        ("operator", {"created_on": "2024-12-20"}),
        ("operator", {"company_name": "other"}),
        ("operator", {"reseller_id": "null"}),
        ("operator", {"limit": 0}),
        ("operator", {"limit": "many"}),
        ("operator", {"offset": -1}),
        ("operator", {"client_id": "abc"}),
        ("operator", {"status": "gone"}),
        ("operator", {"active_at": "yesterday"}),
        ("operator", {"unknown": "1"}),
        ("reseller", {}),
        ("reseller", {"client_id": "{other_client}"}),
        ("other_reseller", {}),
        ("other_reseller", {"ordering": "client_id", "limit": 1}),
        ("client_admin", {}),
        ("client_admin", {"client_id": "{other_client}"}),
        ("client_member", {}),
        (NO_KEY, {}),
        (WRONG_KEY, {}),
    ],
    CLIENTS: [
        ("operator", {}),
        ("operator", {"limit": 2}),
        ("operator", {"limit": 2, "offset": 1, "ordering": "-id"}),
        ("operator", {"ordering": "bogus"}),
        ("operator", {"companyName": "acme"}),
        ("operator", {"email": "nobody@example.com"}),
        ("operator", {"email": "not an address"}),
        ("operator", {"limit": 100_000}),
        ("operator", {"unknown": "1"}),
        ("reseller", {}),
        ("reseller", {"limit": 1}),
        ("other_reseller", {}),
        ("client_admin", {}),
        ("client_member", {}),
        (NO_KEY, {}),
        (WRONG_KEY, {}),
    ],
}

# What the set above is answered: a client's key is refused the account list, and sees its
# own account's addendums.
STATUSES = {ADDENDUMS: {200, 400, 401}, CLIENTS: {200, 400, 401, 403}}


def direct_routes(app: FastAPI) -> dict[str, ApiRoute]:
    return {r.path: r for r in app.routes if isinstance(r, ApiRoute) and r.calls_directly}


@contextmanager
def through_the_solver(route: ApiRoute) -> Iterator[None]:
    """``route`` answered by FastAPI's solver until the block ends: its handler built
    again (as ApiRoute builds it) with direct_call declining the route. The route object
    is every application's in this process: its own handler is put back."""
    kept = route.app, route.calls_directly
    assert route.max_body_size is None  # route.app is then request_response's alone
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(web_route, "direct_handler", lambda route, solved: None)
        route.app = request_response(route.get_route_handler())
    assert not route.calls_directly
    try:
        yield
    finally:
        route.app, route.calls_directly = kept


@dataclass
class Arranged:
    ls: Landscape
    other_client: int  # the other reseller's client


@pytest.fixture
async def arranged(session: AsyncSession) -> Arranged:
    """The landscape, two more accounts (another reseller's client, one of nobody's) and
    addendums of varied products, statuses, currencies and periods for three of them."""
    ls = await landscape(session)
    other = await make_client(
        session, reseller_id=ls.other_reseller_account.id, company_name="Other Client"
    )
    await make_client(session, company_name="Acme Direct")
    await session.commit()
    rows = []
    for n in range(7):
        owner = (ls.client_account.id, other.id, ls.reseller_account.id)[n % 3]
        rows.append(
            addendum_row(
                owner,
                product_id=1 + n % 2,
                currency_id=1 + n % 2,
                status=("active", "stopped", "upcoming")[n % 3],
                active_start=at(f"2025-01-{1 + n:02d} 00:00"),
                active_end=at("2025-03-01 00:00") if n % 2 else None,
                created_at=at(f"2024-12-{18 + n:02d} 10:00"),
                plan_name=("Basic", "Pro")[n % 2],
                reseller_id=ls.reseller_account.id if owner == ls.client_account.id else None,
            )
        )
    await insert_addendums(session, rows)
    return Arranged(ls, other.id)


def headers_of(world: Arranged, who: str, request_id: str) -> dict[str, str]:
    named = {"X-Request-ID": request_id}
    if who == NO_KEY:
        return named
    if who == WRONG_KEY:
        return {**named, **auth("not-a-key-of-anyone")}
    return {**named, **auth(getattr(world.ls, who))}


def filled(params: dict[str, Any], world: Arranged) -> dict[str, Any]:
    """The params with ``{other_client}`` replaced by that account's id."""
    other = str(world.other_client)
    return {
        k: v.replace("{other_client}", other) if isinstance(v, str) else v
        for k, v in params.items()
    }


async def answers(client: httpx.AsyncClient, world: Arranged, path: str) -> list[Any]:
    out = []
    for n, (who, params) in enumerate(ASKED[path]):
        sent = headers_of(world, who, f"compared-{n}")
        r = await client.get(path, params=filled(params, world), headers=sent)
        headers = sorted((k, v) for k, v in r.headers.items() if k not in PER_ANSWER)
        out.append((who, params, r.status_code, headers, r.content))
    return out


class TestTheServicesDirectRoutes:
    def test_are_the_ones_this_file_asks(self, app: FastAPI):
        # A route newly called directly needs its requests here.
        assert set(direct_routes(app)) == set(ASKED)

    @pytest.mark.parametrize("path", sorted(ASKED))
    async def test_answer_as_fastapis_solver_does(
        self, app: FastAPI, client: httpx.AsyncClient, arranged: Arranged, path: str
    ):
        route = direct_routes(app)[path]
        direct = await answers(client, arranged, path)
        with through_the_solver(route):
            solved = await answers(client, arranged, path)
        for by_direct_call, by_solver in zip(direct, solved, strict=True):
            assert by_direct_call == by_solver
        # The set covers what matters: refusals of parameters and of callers, and pages
        # that differ by filter, order and caller.
        assert {status for _, _, status, _, _ in direct} == STATUSES[path]
        pages = {body for _, _, status, _, body in direct if status == 200}
        assert len(pages) >= 8
