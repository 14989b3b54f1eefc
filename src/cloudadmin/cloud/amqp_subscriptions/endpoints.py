"""AMQP subscriptions: subscribe, unsubscribe, read, list, update ."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from cloudadmin.cloud.amqp_subscriptions import probe, service
from cloudadmin.cloud.amqp_subscriptions.schemas import (
    AmqpSubscription,
    AmqpSubscriptionCreate,
    AmqpSubscriptionList,
    AmqpSubscriptionUpdate,
)
from cloudadmin.cloud.scoping import Page
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.web.deps import (
    AppDestinations,
    AppOutbound,
    AppSecretBox,
    CurrentActor,
    CurrentCaller,
    Session,
)
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(
    prefix="/cloud/v1/user_actions", route_class=ApiRoute, tags=["User actions: AMQP subscriptions"]
)
SubscriptionId = Annotated[int, Path(ge=1, le=INT32_MAX, description="Subscription ID")]


@router.post("/subscribe_amqp", summary="Subscribe to user actions over AMQP")
async def subscribe_amqp(
    body: AmqpSubscriptionCreate,
    session: Session,
    actor: CurrentActor,
    to: AppDestinations,
    idempotency: Idempotent,
) -> None:
    """Creates the caller's account's subscription (one per account). Administrators of the
    account; operators (for their own account)."""
    await service.subscribe(session, actor, to, body, idempotency)


@router.post("/subscribe_amqp_test", summary="Send a test message to an AMQP broker")
async def subscribe_amqp_test(
    body: AmqpSubscriptionCreate, session: Session, actor: CurrentActor, outbound: AppOutbound
) -> None:
    """Publishes one persistent test message (`{"test": true, ...}`) with the given
    connection string, exchange and routing key, and waits for the broker's confirmation.
    400 naming `connection_string` when the broker's address is not allowed (loopback,
    private, link-local, CGNAT, metadata...; nothing is tried) or the message cannot be
    delivered: one generic reason per kind of failure (could not connect, authentication,
    TLS, virtual host, exchange), never the broker's words. Nothing is stored.
    Administrators; operators."""
    await probe.send_test_message(session, actor, outbound, body)


@router.post("/unsubscribe_amqp", summary="Unsubscribe from user actions over AMQP")
async def unsubscribe_amqp(session: Session, actor: CurrentActor) -> None:
    """Deletes the caller's account's subscription; 404 when there is none."""
    await service.unsubscribe(session, actor)


async def get_reader(session: Session, caller: CurrentCaller, box: AppSecretBox) -> service.Reader:
    """What a read of subscriptions takes, as one dependency."""
    return service.Reader(session, caller, box)


Reader = Annotated[service.Reader, Depends(get_reader)]


@router.get("/amqp_subscriptions_list", summary="List AMQP subscriptions")
async def list_amqp_subscriptions(
    reader: Reader,
    page: Page,
    client_id: Annotated[
        int | None, Query(ge=0, le=INT32_MAX, description="Only this account's.")
    ] = None,
) -> AmqpSubscriptionList:
    """The caller's account's subscription (operators: every account's). Passwords are
    masked."""
    return await service.list_(reader, page, client_id=client_id)


@router.get("/amqp_subscriptions/{subscription_id}", summary="Read an AMQP subscription")
async def get_amqp_subscription(
    subscription_id: SubscriptionId, reader: Reader
) -> AmqpSubscription:
    """Any user of the owning account; operators. The password is masked."""
    return await service.get(reader, subscription_id)


@router.patch("/amqp_subscriptions/{subscription_id}", summary="Update an AMQP subscription")
async def update_amqp_subscription(
    subscription_id: SubscriptionId,
    body: AmqpSubscriptionUpdate,
    session: Session,
    actor: CurrentActor,
    to: AppDestinations,
) -> AmqpSubscription:
    """Partial: only the fields sent change. The connection string is validated and stored
    encrypted; the answer masks its password, and a connection string sent back with the
    masked password (`user:***@`) keeps the stored one. New delivery settings are tried at
    once (the retry backoff is reset). Administrators of the owning account; operators."""
    return await service.update(session, actor, to, subscription_id, body)
