"""POST /cloud/v2/pricing/{project_id}/{region_id}/k8s/clusters ."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.cloud.pricing import service
from cloudadmin.cloud.pricing.schemas import ClusterPrice, ClusterPriceRequest
from cloudadmin.cloud.scoping import InRegion
from cloudadmin.web.deps import CurrentCaller, ReadSession
from cloudadmin.web.route import ApiRoute

# The prices of one project's resources in one region (InRegion reads the two ids).
router = APIRouter(
    prefix="/cloud/v2/pricing/{project_id}/{region_id}", route_class=ApiRoute, tags=["Pricing"]
)


@router.post("/k8s/clusters", summary="Preview the price of a Kubernetes cluster")
async def preview_k8s_cluster_price(
    at: InRegion,
    body: ClusterPriceRequest,
    # A preview only reads: no transaction, so no write lock on SQLite.
    session: ReadSession,
    caller: CurrentCaller,
) -> ClusterPrice:
    """Prices come from the region's catalogue. Per month = per hour x 730; the discount
    applies before tax; exact decimal arithmetic rounded once to 6 decimal places
    (ROUND_HALF_UP). An unknown flavor or volume type, or a region without a catalogue,
    gives items with `price_status` "error" and null prices (and an "error" total). Flavors
    named `bm...` are bare metal; every other flavor needs `boot_volume_size` and
    `boot_volume_type`. Any user of the account owning the project; operators."""
    return await service.preview(session, caller, at, body)
