"""Kubernetes cluster price preview (operation 16) and the prices file."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.cloud.pricing.catalogue import PriceFileError, load_prices_file
from cloudadmin.db.engine import is_autocommit
from cloudadmin.db.models import PriceCatalogue
from cloudadmin.web.app_state import app_state
from tests.cloud.helpers import CloudLandscape, cloud_landscape, events, make_prices
from tests.factories import auth

ITEM_FIELDS = {
    "currency_code",
    "discount_percent",
    "price_per_hour",
    "price_per_month",
    "price_status",
    "price_without_discount_per_month",
    "tax_percent",
}
CATALOGUE = {
    "currency_code": "EUR",
    "flavors": {
        "g1-standard-2-4": "0.0432",
        "g1-standard-4-8": "0.0864",
        "bm1-infrastructure-small": "0.25",
        "g0-tiny": "0.0000015",
    },
    "volume_types": {"standard": "0.000068", "ssd_hiiops": "0.000137"},
    "public_ipv4_per_hour": "0.004",
    "discount_percent": "10",
    "tax_percent": "20",
}


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


def url(cl: CloudLandscape, project: int | None = None, region: int | None = None) -> str:
    return f"/cloud/v2/pricing/{project or cl.project}/{region or cl.region}/k8s/clusters"


def pool(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "flavor_id": "g1-standard-2-4",
        "node_count": 3,
        "boot_volume_size": 50,
        "boot_volume_type": "standard",
        "is_public_ipv4": True,
    }
    body.update(over)
    return body


def figures(item: dict[str, Any]) -> tuple[Decimal, Decimal, Decimal]:
    """Exact decimals of an item's three prices, as JSON carried them."""
    return tuple(  # type: ignore[return-value]
        Decimal(str(item[k]))
        for k in ("price_per_hour", "price_per_month", "price_without_discount_per_month")
    )


def shown(item: dict[str, Any]) -> None:
    assert set(item) == ITEM_FIELDS
    assert item["price_status"] == "show"
    assert item["currency_code"] == "EUR"
    assert item["discount_percent"] == 10 and item["tax_percent"] == 20


class TestPricePreview:
    async def test_two_pools_with_volumes_ips_discount_and_tax(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        """Hand-computed: factor after discount and tax = 0.9 x 1.2 = 1.08; month = 730 h."""
        await make_prices(session, cl.region, **CATALOGUE)
        body = {
            "pools": [
                pool(),  # 3 x g1-standard-2-4, 3 x 50 GiB standard, 3 public IPs
                pool(
                    flavor_id="g1-standard-4-8",
                    node_count=2,
                    boot_volume_size=100,
                    boot_volume_type="ssd_hiiops",
                    is_public_ipv4=False,
                ),
            ]
        }
        r = await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == {"instances", "publicips", "total_price", "volumes"}
        for item in [*got["instances"], *got["volumes"], *got["publicips"], got["total_price"]]:
            shown(item)
        # instances: 0.0432 x 3 = 0.1296/h; 0.0864 x 2 = 0.1728/h
        assert [figures(i) for i in got["instances"]] == [
            (Decimal("0.139968"), Decimal("102.17664"), Decimal("113.5296")),
            (Decimal("0.186624"), Decimal("136.23552"), Decimal("151.3728")),
        ]
        # volumes: 50 GiB x 3 x 0.000068 = 0.0102/h; 100 GiB x 2 x 0.000137 = 0.0274/h
        assert [figures(i) for i in got["volumes"]] == [
            (Decimal("0.011016"), Decimal("8.04168"), Decimal("8.9352")),
            (Decimal("0.029592"), Decimal("21.60216"), Decimal("24.0024")),
        ]
        # public IPs: only the first pool, 3 x 0.004 = 0.012/h
        assert [figures(i) for i in got["publicips"]] == [
            (Decimal("0.01296"), Decimal("9.4608"), Decimal("10.512")),
        ]
        assert figures(got["total_price"]) == (
            Decimal("0.38016"),
            Decimal("277.5168"),
            Decimal("308.352"),
        )

    async def test_rounded_once_at_the_end(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(
            session, cl.region, **{**CATALOGUE, "discount_percent": "0", "tax_percent": "0"}
        )
        body = {
            "pools": [
                pool(flavor_id="g0-tiny", node_count=1, is_public_ipv4=False, boot_volume_size=10)
            ]
        }
        got = (await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))).json()
        # 0.0000015/h rounds half up to 0.000002; the month is 0.0000015 x 730, not 0.000002 x 730
        assert figures(got["instances"][0]) == (
            Decimal("0.000002"),
            Decimal("0.001095"),
            Decimal("0.001095"),
        )

    async def test_node_count_defaults_to_one_and_ipv4_to_false(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(
            session, cl.region, **{**CATALOGUE, "discount_percent": "0", "tax_percent": "0"}
        )
        body = {
            "pools": [
                {
                    "flavor_id": "g1-standard-2-4",
                    "boot_volume_size": 10,
                    "boot_volume_type": "standard",
                }
            ]
        }
        got = (await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))).json()
        assert figures(got["instances"][0])[0] == Decimal("0.0432")
        assert got["publicips"] == []
        assert figures(got["volumes"][0])[0] == Decimal("0.00068")

    async def test_bare_metal_pool_needs_no_volume(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(session, cl.region, **CATALOGUE)
        body = {"pools": [{"flavor_id": "bm1-infrastructure-small", "node_count": 2}]}
        got = (await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))).json()
        assert got["volumes"] == [] and got["publicips"] == []
        # 0.25 x 2 = 0.5/h x 1.08 = 0.54/h; month 394.2; without discount 0.6 x 730 = 438
        assert figures(got["instances"][0]) == (Decimal("0.54"), Decimal("394.2"), Decimal("438"))
        assert figures(got["total_price"]) == figures(got["instances"][0])

    async def test_unknown_flavor_is_an_error_item_not_a_zero(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(session, cl.region, **CATALOGUE)
        body = {"pools": [pool(flavor_id="g9-unknown"), pool()]}
        r = await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        bad, good = got["instances"]
        assert bad == {
            "currency_code": "EUR",
            "discount_percent": 10,
            "tax_percent": 20,
            "price_status": "error",
            "price_per_hour": None,
            "price_per_month": None,
            "price_without_discount_per_month": None,
        }
        shown(good)
        # volumes and IPs of the unknown-flavor pool are still priced
        assert [v["price_status"] for v in got["volumes"]] == ["show", "show"]
        assert got["total_price"]["price_status"] == "error"
        assert got["total_price"]["price_per_hour"] is None

    async def test_volume_type_without_a_price_is_an_error_item(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(session, cl.region, **CATALOGUE)
        body = {"pools": [pool(boot_volume_type="ultra")]}
        got = (await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))).json()
        assert got["volumes"][0]["price_status"] == "error"
        assert got["instances"][0]["price_status"] == "show"
        assert got["total_price"]["price_status"] == "error"

    async def test_region_without_catalogue_prices_nothing(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        body = {"pools": [pool()]}
        r = await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))
        assert r.status_code == 200, r.text
        got = r.json()
        items = [*got["instances"], *got["volumes"], *got["publicips"], got["total_price"]]
        assert len(items) == 4
        for item in items:
            assert set(item) == ITEM_FIELDS
            assert item["price_status"] == "error"
            assert item["price_per_hour"] is None and item["price_per_month"] is None
            assert item["currency_code"] is None and item["discount_percent"] is None
            assert item["tax_percent"] == 0  # a number, never null (the provider's type)

    async def test_records_no_user_action(
        self, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(session, cl.region, **CATALOGUE)
        await client.post(url(cl), json={"pools": [pool()]}, headers=auth(cl.ls.client_admin))
        assert await events(session) == []

    @pytest.mark.parametrize(
        ("over", "field"),
        [
            ({"node_count": 0}, "pools.0.node_count"),
            ({"node_count": 201}, "pools.0.node_count"),
            ({"boot_volume_size": 9}, "pools.0.boot_volume_size"),
            ({"boot_volume_size": 2001}, "pools.0.boot_volume_size"),
            ({"boot_volume_type": "fast"}, "pools.0.boot_volume_type"),
            ({"flavor_id": ""}, "pools.0.flavor_id"),
            ({"is_public_ipv4": "maybe"}, "pools.0.is_public_ipv4"),
        ],
    )
    async def test_pool_bounds(
        self, client: httpx.AsyncClient, cl: CloudLandscape, over: dict[str, Any], field: str
    ):
        r = await client.post(
            url(cl), json={"pools": [pool(**over)]}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 400, r.text
        assert r.json()["exception_class"] == "ValidationError"
        assert list(r.json()["invalid_fields"]) == [field]

    @pytest.mark.parametrize("count", [1, 200])
    async def test_node_count_limits_are_allowed(
        self, client: httpx.AsyncClient, cl: CloudLandscape, count: int
    ):
        r = await client.post(
            url(cl), json={"pools": [pool(node_count=count)]}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 200

    @pytest.mark.parametrize("size", [10, 2000])
    async def test_volume_size_limits_are_allowed(
        self, client: httpx.AsyncClient, cl: CloudLandscape, size: int
    ):
        r = await client.post(
            url(cl),
            json={"pools": [pool(boot_volume_size=size)]},
            headers=auth(cl.ls.client_member),
        )
        assert r.status_code == 200

    @pytest.mark.parametrize(
        "vtype", ["cold", "ssd_hiiops", "ssd_local", "ssd_lowlatency", "standard", "ultra"]
    )
    async def test_every_volume_type_is_accepted(
        self, client: httpx.AsyncClient, cl: CloudLandscape, vtype: str
    ):
        r = await client.post(
            url(cl),
            json={"pools": [pool(boot_volume_type=vtype)]},
            headers=auth(cl.ls.client_member),
        )
        assert r.status_code == 200

    async def test_flavor_id_is_required(self, client: httpx.AsyncClient, cl: CloudLandscape):
        p = pool()
        del p["flavor_id"]
        r = await client.post(url(cl), json={"pools": [p]}, headers=auth(cl.ls.client_member))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["pools.0.flavor_id"]

    @pytest.mark.parametrize("missing", ["boot_volume_size", "boot_volume_type"])
    async def test_virtual_flavor_needs_its_boot_volume(
        self, client: httpx.AsyncClient, cl: CloudLandscape, missing: str
    ):
        p = pool()
        del p[missing]
        r = await client.post(
            url(cl), json={"pools": [pool(), p]}, headers=auth(cl.ls.client_member)
        )
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == [f"pools.1.{missing}"]

    @pytest.mark.parametrize("body", [{}, {"pools": []}, {"pools": None}, {"pools": "x"}])
    async def test_pools_required_and_non_empty(
        self, client: httpx.AsyncClient, cl: CloudLandscape, body: dict[str, Any]
    ):
        r = await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))
        assert r.status_code == 400
        assert list(r.json()["invalid_fields"]) == ["pools"]

    async def test_operator_may_preview(self, client: httpx.AsyncClient, cl: CloudLandscape):
        r = await client.post(url(cl), json={"pools": [pool()]}, headers=auth(cl.ls.operator))
        assert r.status_code == 200

    @pytest.mark.parametrize("who", ["reseller", "other_reseller"])
    async def test_other_tenants_get_404(
        self, client: httpx.AsyncClient, cl: CloudLandscape, who: str
    ):
        r = await client.post(url(cl), json={"pools": [pool()]}, headers=auth(getattr(cl.ls, who)))
        assert r.status_code == 404

    async def test_project_of_another_client_is_404(
        self, client: httpx.AsyncClient, cl: CloudLandscape
    ):
        r = await client.post(
            url(cl, project=cl.foreign_project),
            json={"pools": [pool()]},
            headers=auth(cl.ls.client_admin),
        )
        assert r.status_code == 404


class TestPricePreviewIsARead:
    """The preview declares a ReadSession (cloud/pricing/endpoints.py): it runs without
    a transaction although it is a POST, so on SQLite it takes no write lock to read."""

    async def test_its_statements_run_without_a_transaction(
        self, app: Any, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        await make_prices(session, cl.region, **CATALOGUE)
        seen: list[tuple[str, bool]] = []

        def record(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            seen.append((statement, is_autocommit(conn)))

        engine = app_state(app).engine.sync_engine
        event.listen(engine, "before_cursor_execute", record)
        try:
            r = await client.post(
                url(cl), json={"pools": [pool()]}, headers=auth(cl.ls.client_member)
            )
        finally:
            event.remove(engine, "before_cursor_execute", record)
        assert r.status_code == 200, r.text
        reads = [autocommit for sql, autocommit in seen if "price_catalogues" in sql]
        assert reads == [True], seen
        assert not any(sql.startswith("BEGIN") for sql, _ in seen), seen

    async def test_it_reads_while_another_connection_holds_the_write_lock(
        self, app: Any, client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
    ):
        engine = app_state(app).engine
        if engine.dialect.name != "sqlite":
            pytest.skip("SQLite's write lock (PostgreSQL readers never wait for writers)")
        await make_prices(session, cl.region, **CATALOGUE)
        # A key's first use writes its last_usage (auth/service.py), once per interval:
        # done before the lock is taken, as for any key in use.
        first = await client.post(
            url(cl), json={"pools": [pool()]}, headers=auth(cl.ls.client_member)
        )
        assert first.status_code == 200, first.text
        read_catalogue = asyncio.Event()

        def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if "price_catalogues" in statement:
                read_catalogue.set()

        async with engine.connect() as holder:
            await holder.begin()  # BEGIN IMMEDIATE (db/engine.py): the write lock, held
            event.listen(engine.sync_engine, "before_cursor_execute", record)
            answer = asyncio.create_task(
                client.post(url(cl), json={"pools": [pool()]}, headers=auth(cl.ls.client_member))
            )
            try:
                # Below SQLite's busy timeout (10 s), after which a writer gives up.
                await asyncio.wait_for(read_catalogue.wait(), 8)
            except TimeoutError:
                pytest.fail(
                    "the preview did not read its catalogue while another "
                    "connection held the write lock: it waited for the lock"
                )
            finally:
                event.remove(engine.sync_engine, "before_cursor_execute", record)
                # Its activity-log row is a write: it goes in once the lock is free.
                await holder.rollback()
        r = await answer
        assert r.status_code == 200, r.text


class TestPricesFile:
    async def test_loads_and_replaces_catalogues(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        app,
        tmp_path: Path,
    ):
        await make_prices(session, cl.other_region, currency_code="USD")
        path = tmp_path / "prices.json"
        path.write_text(
            json.dumps(
                {
                    "prices": [
                        {
                            "region_id": cl.region,
                            "currency_code": "EUR",
                            "flavors": {"g1-standard-2-4": 0.1},
                            "volume_types": {"standard": 0.0001},
                            "public_ipv4_per_hour": 0.005,
                            "tax_percent": 0,
                            "discount_percent": 0,
                        },
                        {
                            "region_id": cl.other_region,
                            "currency_code": "GBP",
                            "public_ipv4_per_hour": 1,
                        },
                    ]
                }
            )
        )
        assert await load_prices_file(app_state(app).sessionmaker, path) == 2
        body = {"pools": [pool(node_count=1, boot_volume_size=10, is_public_ipv4=False)]}
        got = (await client.post(url(cl), json=body, headers=auth(cl.ls.client_member))).json()
        assert figures(got["instances"][0])[0] == Decimal("0.1")
        assert figures(got["volumes"][0])[0] == Decimal("0.001")
        row = await session.get(PriceCatalogue, cl.other_region, populate_existing=True)
        assert row is not None and row.currency_code == "GBP"

    async def test_a_plain_list_is_accepted(
        self, session: AsyncSession, cl: CloudLandscape, app, tmp_path: Path
    ):
        path = tmp_path / "prices.json"
        path.write_text(
            json.dumps(
                [{"region_id": cl.region, "currency_code": "USD", "public_ipv4_per_hour": "0.004"}]
            )
        )
        assert await load_prices_file(app_state(app).sessionmaker, path) == 1

    @pytest.mark.parametrize(
        ("doc", "where"),
        [
            ([{"currency_code": "EUR", "public_ipv4_per_hour": 1}], "/0/region_id"),
            (
                [{"region_id": "R", "currency_code": "eur", "public_ipv4_per_hour": 1}],
                "/0/region_id",
            ),
            (
                {"prices": [{"region_id": 1, "currency_code": "EUR", "public_ipv4_per_hour": -1}]},
                "/prices/0/public_ipv4_per_hour",
            ),
            (
                [{"region_id": 1, "currency_code": "EUR", "public_ipv4_per_hour": 1, "vat": 3}],
                "/0/vat",
            ),
            (
                [
                    {
                        "region_id": 1,
                        "currency_code": "EUR",
                        "public_ipv4_per_hour": 1,
                        "tax_percent": 101,
                    }
                ],
                "/0/tax_percent",
            ),
            ({"regions": []}, "/regions"),
        ],
    )
    async def test_bad_records_are_refused_naming_the_place(
        self, app, tmp_path: Path, doc: Any, where: str
    ):
        path = tmp_path / "prices.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(PriceFileError) as err:
            await load_prices_file(app_state(app).sessionmaker, path)
        assert str(err.value).startswith(where + ":")

    async def test_unknown_region_writes_nothing(
        self, session: AsyncSession, cl: CloudLandscape, app, tmp_path: Path
    ):
        path = tmp_path / "prices.json"
        path.write_text(
            json.dumps(
                [
                    {"region_id": cl.region, "currency_code": "EUR", "public_ipv4_per_hour": 1},
                    {"region_id": 987654, "currency_code": "EUR", "public_ipv4_per_hour": 1},
                ]
            )
        )
        with pytest.raises(PriceFileError, match="987654"):
            await load_prices_file(app_state(app).sessionmaker, path)
        assert await session.get(PriceCatalogue, cl.region) is None

    async def test_unreadable_or_invalid_json(self, app, tmp_path: Path):
        with pytest.raises(PriceFileError, match="cannot be read"):
            await load_prices_file(app_state(app).sessionmaker, tmp_path / "missing.json")
        path = tmp_path / "bad.json"
        path.write_text("{not json")
        with pytest.raises(PriceFileError, match="not valid JSON"):
            await load_prices_file(app_state(app).sessionmaker, path)
