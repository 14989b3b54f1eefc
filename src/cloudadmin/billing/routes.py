"""The routers of the billing domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.billing.addendums.endpoints import router as addendums_router

routers: list[APIRouter] = [addendums_router]
