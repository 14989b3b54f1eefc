"""An instant in a query string that the calendar can hold but UTC cannot (the first
or last day of year 1 or 9999 with an offset that pushes it over the edge) is a 400
naming the parameter, not a 500 (found by bench/fuzz.py)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.factories import Landscape, auth, landscape

EDGES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01 00:30+0100"]


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


class TestActivityLog:
    @pytest.mark.parametrize("value", EDGES)
    async def test_is_400_naming_the_parameter(
        self, client: httpx.AsyncClient, ls: Landscape, value: str
    ):
        r = await client.get(
            "/iam/activity_log/requests",
            headers=auth(ls.operator),
            params={"min_requested_at": value},
        )
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == ["min_requested_at"]


class TestAddendums:
    @pytest.mark.parametrize("name", ["active_at", "created_after", "active_end_to"])
    @pytest.mark.parametrize("value", EDGES)
    async def test_is_400_naming_the_parameter(
        self, client: httpx.AsyncClient, ls: Landscape, name: str, value: str
    ):
        r = await client.get(
            "/billing/org/v1/addendums", headers=auth(ls.operator), params={name: value}
        )
        assert r.status_code == 400, r.text
        assert list(r.json()["errors"]) == [name]

    async def test_the_last_instant_in_utc_is_still_accepted(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.get(
            "/billing/org/v1/addendums",
            headers=auth(ls.operator),
            params={"created_before": "9999-12-31T23:59:59Z"},
        )
        assert r.status_code == 200, r.text
