"""Every paginated envelope carries ``next`` and ``previous``, null where there is no such
page (DRF's limit/offset pagination, the provider's framework, always writes both):
a client's ``while page["next"]:`` must never meet a KeyError.

The lists are found in the service's OpenAPI document (tests/web/lists.py): a new
paginated list fails here until its schema requires both links and it has a case below.
Each case is walked on both databases at its first, a middle, its last page and past
its end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.billing.helpers import addendum_row, insert_addendums
from tests.factories import auth, landscape, make_client, make_seller, make_user
from tests.web.lists import ListOperation, ident, list_operations

LINKED = [op for op in list_operations() if op.has_links]


@dataclass(frozen=True)
class Arranged:
    url: str
    headers: dict[str, str]
    params: dict[str, str]  # kept in every link


Case = Callable[[httpx.AsyncClient, AsyncSession], Awaitable[Arranged]]
CASES: dict[str, Case] = {}


def case(path: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[path] = fn
        return fn

    return register


@case("/iam/users")
async def users(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    for _ in range(3):
        await make_user(session, ls.client_account)
    await session.commit()
    return Arranged("/iam/users", auth(ls.client_admin), {})


@case("/iam/admin/sellers")
async def sellers(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    for _ in range(3):
        await make_seller(session, ls.reseller_account)
    await session.commit()
    return Arranged("/iam/admin/sellers", auth(ls.reseller), {"ordering": "-id"})


@case("/iam/clients")
async def clients(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    for _ in range(3):
        await make_client(session, reseller_id=ls.reseller_account.id)
    await session.commit()
    return Arranged("/iam/clients", auth(ls.reseller), {"deleted": "false"})


@case("/iam/reselling/resellers/{resellerId}/notification_settings")
async def notification_settings(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    url = f"/iam/reselling/resellers/{ls.reseller_account.id}/notification_settings"
    for n in range(3):
        body = {"notification_type": "deletion_request", "email": f"ops{n}@acme.example"}
        created = await client.post(url, json=body, headers=auth(ls.reseller))
        assert created.status_code == 201, created.text
    return Arranged(url, auth(ls.reseller), {"ordering": "email"})


@case("/iam/activity_log/requests")
async def activity_log(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    for _ in range(3):
        assert (await client.get("/iam/clients/me", headers=auth(ls.reseller))).status_code == 200
    # Filtered on those requests: every read of the log is logged too, and would move its end.
    return Arranged("/iam/activity_log/requests", auth(ls.reseller), {"path": "/iam/clients/me"})


@case("/billing/org/v1/addendums")
async def addendums(client: httpx.AsyncClient, session: AsyncSession) -> Arranged:
    ls = await landscape(session)
    await insert_addendums(session, [addendum_row(ls.client_account.id) for _ in range(3)])
    return Arranged("/billing/org/v1/addendums", auth(ls.operator), {"status": "active"})


@pytest.mark.parametrize("op", LINKED, ids=ident)
def test_schema_requires_both_links(op: ListOperation) -> None:
    """The OpenAPI document says what the answers do: both links required, nullable."""
    assert op.envelope is not None
    props = op.envelope["properties"]
    for link in ("next", "previous"):
        assert link in props, f"{op.path}: the page has no {link}"
        assert link in op.envelope.get("required", []), f"{op.path}: {link} is not required"
        kinds = [b.get("type") for b in props[link].get("anyOf", [props[link]])]
        assert kinds == ["string", "null"], f"{op.path}: {link} is {props[link]}"


@pytest.mark.parametrize("op", LINKED, ids=ident)
def test_has_a_case(op: ListOperation) -> None:
    assert op.path in CASES, f"{op.path} is a paginated list without a case here"


def test_cases_name_paginated_lists() -> None:
    assert set(CASES) <= {op.path for op in LINKED}


def _paging(link: str) -> tuple[int, int]:
    query = parse_qs(urlsplit(link).query)
    return int(query["limit"][0]), int(query.get("offset", ["0"])[0])


@pytest.mark.parametrize("op", [op for op in LINKED if op.path in CASES], ids=ident)
async def test_links_at_every_position(
    op: ListOperation, client: httpx.AsyncClient, session: AsyncSession
) -> None:
    arranged = await CASES[op.path](client, session)
    assert op.items_key is not None

    async def page(offset: int) -> dict[str, object]:
        params = {**arranged.params, "limit": "1", "offset": str(offset)}
        r = await client.get(arranged.url, params=params, headers=arranged.headers)
        assert r.status_code == 200, r.text
        body = r.json()
        assert isinstance(body, dict)
        assert {"count", "next", "previous", op.items_key} <= set(body), body
        return body

    first = await page(0)
    count = first["count"]
    assert isinstance(count, int) and count >= 3, first
    middle, last, past = await page(1), await page(count - 1), await page(count + 5)
    assert all(p["count"] == count for p in (middle, last, past))

    assert first["previous"] is None and isinstance(first["next"], str)
    assert isinstance(middle["previous"], str) and isinstance(middle["next"], str)
    assert last["next"] is None and isinstance(last["previous"], str)
    assert past["next"] is None and isinstance(past["previous"], str)
    assert past[op.items_key] == []

    assert _paging(first["next"]) == (1, 1)
    assert _paging(middle["previous"]) == (1, 0)
    assert _paging(middle["next"]) == (1, 2)
    assert _paging(last["previous"]) == (1, count - 2)
    for link in (first["next"], middle["previous"], last["previous"]):
        kept = parse_qs(urlsplit(link).query)
        assert all(kept[name] == [value] for name, value in arranged.params.items()), link


@pytest.mark.parametrize("op", [op for op in LINKED if op.path in CASES], ids=ident)
async def test_whole_list_has_null_links(
    op: ListOperation, client: httpx.AsyncClient, session: AsyncSession
) -> None:
    """Without ``limit``: a plain array, or one page whose links are both null."""
    arranged = await CASES[op.path](client, session)
    r = await client.get(arranged.url, params=arranged.params, headers=arranged.headers)
    assert r.status_code == 200, r.text
    body = r.json()
    if isinstance(body, list):
        return
    assert body["next"] is None or body["count"] > len(body[op.items_key]), body
    assert "next" in body and "previous" in body and body["previous"] is None, body
