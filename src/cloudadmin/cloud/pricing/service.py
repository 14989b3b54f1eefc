"""Kubernetes cluster price preview: any user of the owning account (docs/access.md).

Arithmetic (docs/cloud.md):

- a pool's instances cost ``flavor price per hour x node_count``; its boot volumes
  ``size (GiB) x volume type price per GiB-hour x node_count``; its public IPs
  ``public_ipv4_per_hour x node_count`` when ``is_public_ipv4``;
- the discount applies first, then tax on the discounted amount:
  ``per_hour = base x (1 - discount/100) x (1 + tax/100)``;
  ``without_discount = base x (1 + tax/100)``;
- per month = per hour x :data:`HOURS_PER_MONTH`;
- everything is exact :class:`~decimal.Decimal` arithmetic; each figure (and the
  total, summed from the exact figures) is rounded once, at the end, to
  :data:`PRECISION` with ROUND_HALF_UP.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.cloud import scoping
from cloudadmin.cloud.pricing.catalogue import Prices, prices_of_region
from cloudadmin.cloud.pricing.schemas import (
    ClusterPrice,
    ClusterPriceRequest,
    PoolPriceRequest,
    PriceItem,
)
from cloudadmin.cloud.scoping import RegionPath
from cloudadmin.errors import ValidationError

HOURS_PER_MONTH = Decimal(730)  # 365 days x 24 hours / 12 months
PRECISION = Decimal("0.000001")  # six decimal places
_HUNDRED = Decimal(100)
REQUIRED_FOR_VIRTUAL = "This field is required for virtual flavors."


def is_virtual(flavor_id: str) -> bool:
    """Bare-metal flavors are named ``bm...``; every other flavor is a virtual machine."""
    return not flavor_id.lower().startswith("bm")


def _round(value: Decimal) -> Decimal:
    return value.quantize(PRECISION, rounding=ROUND_HALF_UP)


class _Figure:
    """Exact (unrounded) amounts of one item: hourly after discount and tax, and the
    monthly amount before discount."""

    def __init__(self, base_per_hour: Decimal, prices: Prices) -> None:
        taxed = Decimal(1) + prices.tax_percent / _HUNDRED
        discounted = Decimal(1) - prices.discount_percent / _HUNDRED
        self.per_hour = base_per_hour * discounted * taxed
        self.without_discount_per_hour = base_per_hour * taxed


def _shown(figure: _Figure, prices: Prices) -> PriceItem:
    return PriceItem(
        currency_code=prices.currency_code,
        discount_percent=prices.discount_percent,
        price_per_hour=_round(figure.per_hour),
        price_per_month=_round(figure.per_hour * HOURS_PER_MONTH),
        price_status="show",
        price_without_discount_per_month=_round(figure.without_discount_per_hour * HOURS_PER_MONTH),
        tax_percent=prices.tax_percent,
    )


def _error(prices: Prices | None) -> PriceItem:
    return PriceItem(
        currency_code=prices.currency_code if prices else None,
        discount_percent=prices.discount_percent if prices else None,
        price_per_hour=None,
        price_per_month=None,
        price_status="error",
        price_without_discount_per_month=None,
        # The provider types tax_percent as a number, never null: no catalogue, no tax.
        tax_percent=prices.tax_percent if prices else Decimal(0),
    )


def _check_volumes(pools: list[PoolPriceRequest]) -> None:
    fields: dict[str, list[str]] = {}
    for index, pool in enumerate(pools):
        if not is_virtual(pool.flavor_id):
            continue
        for name in ("boot_volume_size", "boot_volume_type"):
            if getattr(pool, name) is None:
                fields[f"pools.{index}.{name}"] = [REQUIRED_FOR_VIRTUAL]
    if fields:
        raise ValidationError(fields=fields)


def price_cluster(body: ClusterPriceRequest, prices: Prices | None) -> ClusterPrice:
    """The preview for ``body`` under ``prices`` (None: the region has no catalogue)."""
    _check_volumes(body.pools)
    figures: list[_Figure | None] = []
    instances: list[PriceItem] = []
    volumes: list[PriceItem] = []
    publicips: list[PriceItem] = []

    def add(target: list[PriceItem], unit: Decimal | None, quantity: int) -> None:
        if prices is None or unit is None:
            figures.append(None)
            target.append(_error(prices))
            return
        figure = _Figure(unit * quantity, prices)
        figures.append(figure)
        target.append(_shown(figure, prices))

    for pool in body.pools:
        n = pool.node_count
        add(instances, prices.flavors.get(pool.flavor_id) if prices else None, n)
        if is_virtual(pool.flavor_id) and pool.boot_volume_type and pool.boot_volume_size:
            unit = prices.volume_types.get(pool.boot_volume_type) if prices else None
            add(volumes, unit, pool.boot_volume_size * n)
        if pool.is_public_ipv4:
            add(publicips, prices.public_ipv4_per_hour if prices else None, n)

    if prices is None or any(f is None for f in figures):
        total = _error(prices)
    else:
        total_figure = _Figure(Decimal(0), prices)
        total_figure.per_hour = sum((f.per_hour for f in figures if f), Decimal(0))
        total_figure.without_discount_per_hour = sum(
            (f.without_discount_per_hour for f in figures if f), Decimal(0)
        )
        total = _shown(total_figure, prices)
    return ClusterPrice(
        instances=instances, publicips=publicips, total_price=total, volumes=volumes
    )


async def preview(
    session: AsyncSession,
    caller: Caller,
    at: RegionPath,
    body: ClusterPriceRequest,
) -> ClusterPrice:
    await scoping.visible_project(session, caller, at.project_id)
    return price_cluster(body, await prices_of_region(session, at.region_id))
