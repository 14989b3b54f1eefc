"""Webhook subscriptions: subscribe, unsubscribe, list (the provider's three)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.cloud.scoping import Page
from cloudadmin.cloud.webhook_subscriptions import service
from cloudadmin.cloud.webhook_subscriptions.schemas import (
    WebhookSubscriptionCreate,
    WebhookSubscriptionList,
)
from cloudadmin.web.deps import AppDestinations, CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(
    prefix="/cloud/v1/user_actions",
    route_class=ApiRoute,
    tags=["User actions: webhook subscriptions"],
)


@router.post(
    "/subscribe",
    summary="Subscribe to user actions over an HTTP webhook",
)
async def subscribe_webhook(
    body: WebhookSubscriptionCreate,
    session: Session,
    actor: CurrentActor,
    to: AppDestinations,
    idempotency: Idempotent,
) -> None:
    """Creates the caller's account's webhook subscription (one per account): each user
    action of the account is POSTed to `url` as JSON (the same record the AMQP message
    carries), with the header `auth_header_name: auth_header_value`. The value is stored
    encrypted and never shown again. 400 naming `url` when it is not http(s), carries a user
    name or password, or names an address that is not allowed (loopback, private,
    link-local, metadata...; host names are checked each time the service connects).
    Administrators of the account; operators (for their own account)."""
    await service.subscribe(session, actor, to, body, idempotency)


@router.post(
    "/unsubscribe",
    summary="Unsubscribe from user actions over an HTTP webhook",
    responses={404: {"description": "The account has no webhook subscription"}},
)
async def unsubscribe_webhook(session: Session, actor: CurrentActor) -> None:
    """Deletes the caller's account's webhook subscription and what it was still owed; 404
    when there is none. Administrators of the account; operators."""
    await service.unsubscribe(session, actor)


@router.get("/subscriptions_list", summary="List webhook subscriptions")
async def list_webhook_subscriptions(
    session: Session, caller: CurrentCaller, page: Page
) -> WebhookSubscriptionList:
    """The caller's account's webhook subscription (operators: every account's).
    `auth_header_value` is always masked (`***`). Any user of the account."""
    return await service.list_(session, caller, page)
