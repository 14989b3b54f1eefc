"""The routers of the cloud domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.cloud.amqp_subscriptions.endpoints import router as amqp_subscriptions_router
from cloudadmin.cloud.lifecycle_policies.endpoints import router as lifecycle_policies_router
from cloudadmin.cloud.listeners.endpoints import router as listeners_router
from cloudadmin.cloud.pricing.endpoints import router as pricing_router
from cloudadmin.cloud.tasks.endpoints import router as tasks_router
from cloudadmin.cloud.user_actions.endpoints import router as user_actions_router
from cloudadmin.cloud.users.endpoints import router as users_router
from cloudadmin.cloud.webhook_subscriptions.endpoints import router as webhooks_router

routers: list[APIRouter] = [
    listeners_router,
    lifecycle_policies_router,
    pricing_router,
    users_router,
    amqp_subscriptions_router,
    user_actions_router,
    webhooks_router,
    tasks_router,
]
