"""Wire shapes of the Kubernetes cluster price preview ."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, Field, PlainSerializer

from cloudadmin.kit.body import LenientBody

VolumeType = Literal["cold", "ssd_hiiops", "ssd_local", "ssd_lowlatency", "standard", "ultra"]

# Exact decimals inside, JSON numbers on the wire (as the real API answers).
Number = Annotated[
    Decimal, PlainSerializer(lambda d: float(d), return_type=float, when_used="json")
]


class PoolPriceRequest(LenientBody):
    flavor_id: str = Field(min_length=1, max_length=255, description="Flavor of the nodes.")
    node_count: int = Field(default=1, ge=1, le=200, description="Nodes in the pool.")
    boot_volume_size: int | None = Field(
        default=None,
        ge=10,
        le=2000,
        description="Boot volume size in GiB; required for virtual flavors.",
    )
    boot_volume_type: VolumeType | None = Field(
        default=None, description="Boot volume type; required for virtual flavors."
    )
    is_public_ipv4: bool = Field(default=False, description="A public IPv4 address per node.")


class ClusterPriceRequest(LenientBody):
    pools: list[PoolPriceRequest] = Field(min_length=1, description="The cluster's pools.")


class PriceItem(BaseModel):
    currency_code: str | None
    discount_percent: Number | None
    price_per_hour: Number | None
    price_per_month: Number | None
    price_status: Literal["show", "hide", "error"] = Field(
        description="show: prices are given; error: they cannot be computed (null)."
    )
    price_without_discount_per_month: Number | None
    tax_percent: Number = Field(description="0 in a region without a price catalogue.")


class ClusterPrice(BaseModel):
    instances: list[PriceItem] = Field(description="One item per pool: its nodes.")
    publicips: list[PriceItem] = Field(
        description="One item per pool with is_public_ipv4: one address per node."
    )
    total_price: PriceItem
    volumes: list[PriceItem] = Field(
        description="One item per pool with a boot volume: one volume per node."
    )
