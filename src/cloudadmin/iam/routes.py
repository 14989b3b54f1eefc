"""The routers of the iam domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.iam.activity_log.endpoints import router as activity_log_router
from cloudadmin.iam.sellers.endpoints import router as sellers_router

routers: list[APIRouter] = [sellers_router, activity_log_router]
