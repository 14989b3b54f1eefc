"""Arranging addendums for tests: rows written as the importer writes them (Core, batched)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import derive_row
from cloudadmin.billing.addendums.creation_days import day_number
from cloudadmin.billing.catalogue import PRODUCTS
from cloudadmin.db.models import Addendum
from tests.factories import auth

URL = "/billing/org/v1/addendums"
_ids = itertools.count(1)


def at(text: str) -> datetime:
    """'2025-05-15 12:00' -> an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def caller(superuser: bool = False, account_type: str = "common") -> Caller:
    """A caller of the list without a key behind it (for the service's functions)."""
    return Caller(
        user_id=1,
        user_email="u@example.com",
        superuser=superuser,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=2,
        account_type=account_type,
        account_reseller_id=None,
    )


def addendum_row(client_id: int, **fields: Any) -> dict[str, Any]:
    product_id = fields.pop("product_id", 1)
    currency_id = fields.pop("currency_id", 1)
    row: dict[str, Any] = {
        "id": fields.pop("id", None) or next(_ids) + 500_000,
        "client_id": client_id,
        "payer_id": None,
        "provider_id": None,
        "reseller_id": None,
        "status": "active",
        "active_start": at("2025-01-01 00:00"),
        "active_end": None,
        "created_at": at("2024-12-20 10:00"),
        "currency_id": currency_id,
        "currency_char_code": {1: "USD", 2: "EUR"}[currency_id],
        "currency_symbol": {1: "$", 2: "€"}[currency_id],
        "plan_id": 10,
        "plan_name": "Basic",
        "product_id": product_id,
        "product_name": PRODUCTS[product_id].title(),
        "product_internal_name": PRODUCTS[product_id],
    }
    row.update(fields)
    return row


def item_paths(item: dict[str, Any], prefix: str = "") -> list[str]:
    """An item's (or a record's) values by their dotted paths, in order."""
    found: list[str] = []
    for key, value in item.items():
        nested = isinstance(value, dict)
        found += item_paths(value, f"{prefix}{key}.") if nested else [prefix + key]
    return found


async def insert_addendums(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(Addendum), [derive_row(r) for r in rows])
    await session.commit()


async def listing(
    client: httpx.AsyncClient, token: str, params: Any = None, status: int = 200
) -> dict[str, Any]:
    r = await client.get(URL, params=params, headers=auth(token))
    assert r.status_code == status, r.text
    return r.json()


async def ids_of(client: httpx.AsyncClient, token: str, params: Any = None) -> list[int]:
    body = await listing(client, token, params)
    return [item["id"] for item in body["results"]]


async def days_match_rows(session: AsyncSession, *, exact_bounds: bool = False) -> None:
    """Per day of creation: the counters (addendum_days) sum to the real count, and their
    bounds hold every id (are its smallest and largest with ``exact_bounds``)."""
    stored = (await session.execute(text("SELECT id, created_at FROM addendums"))).all()
    real: dict[int, list[int]] = {}
    for id_, created in stored:
        created = created if isinstance(created, datetime) else datetime.fromisoformat(created)
        real.setdefault(day_number(created.replace(tzinfo=created.tzinfo or UTC)), []).append(id_)
    kept = (
        await session.execute(
            text("SELECT day, sum(n), min(min_id), max(max_id) FROM addendum_days GROUP BY day")
        )
    ).all()
    await session.commit()  # end the read: SQLite would hold its lock
    counted = {day: n for day, n, _, _ in kept if n}
    assert counted == {day: len(ids) for day, ids in real.items()}
    bounds = {day: (low, high) for day, _, low, high in kept}
    for day, ids in real.items():
        low, high = bounds[day]
        assert low <= min(ids) and max(ids) <= high, day
        if exact_bounds:
            assert (low, high) == (min(ids), max(ids)), day
