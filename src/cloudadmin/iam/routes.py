"""The routers of the iam domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.iam.activity_log.endpoints import router as activity_log_router
from cloudadmin.iam.api_tokens.endpoints import router as api_tokens_router
from cloudadmin.iam.api_tokens.endpoints_v2 import router as api_tokens_v2_router
from cloudadmin.iam.client_users.endpoints import router as client_users_router
from cloudadmin.iam.clients.endpoints import router as clients_router
from cloudadmin.iam.reselling.branding.endpoints import router as branding_router
from cloudadmin.iam.reselling.notifications.endpoints import router as notifications_router
from cloudadmin.iam.sellers.endpoints import router as sellers_router
from cloudadmin.iam.users.endpoints import router as users_router

routers: list[APIRouter] = [
    clients_router,
    users_router,
    client_users_router,
    sellers_router,
    branding_router,
    notifications_router,
    activity_log_router,
    api_tokens_router,
    api_tokens_v2_router,
]
