"""The start page: who is signed in, what they see, and the sections."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.portal.context import PREFIX, AdminPage, PortalRoute
from cloudadmin.portal.navigation import sections_of

SCOPES = {
    PortalKind.operator: "You are an operator: you see every account.",
    PortalKind.reseller: "You are a reseller: you see your own clients and settings.",
    PortalKind.seller: "You are a seller: you see the clients assigned to you.",
}

router = APIRouter(prefix=PREFIX, route_class=PortalRoute, include_in_schema=False)


@router.get("/")
async def home(portal: AdminPage) -> Response:
    kind = portal.user.kind
    sections = [s for s in sections_of(kind) if s.path != f"{PREFIX}/"]
    return portal.page(
        "Home", "home.html", name=portal.user.name, scope=SCOPES[kind], sections=sections
    )
