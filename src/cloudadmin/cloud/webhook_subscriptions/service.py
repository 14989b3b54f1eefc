"""Webhook subscriptions: one per account, as the AMQP one. Any user of the account
lists it (the secret header masked); its administrators (and operators, for their own
account) subscribe and unsubscribe (docs/access.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.cloud import scoping
from cloudadmin.cloud.one_per_account import refuse_another
from cloudadmin.cloud.webhook_subscriptions import repository
from cloudadmin.cloud.webhook_subscriptions.destination import (
    header_name_problems,
    header_value_problems,
    url_problems,
)
from cloudadmin.cloud.webhook_subscriptions.schemas import (
    WebhookSubscription,
    WebhookSubscriptionCreate,
    WebhookSubscriptionList,
)
from cloudadmin.db.models import WebhookSubscription as SubscriptionRow
from cloudadmin.errors import NotFound, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.kit.outbound import Destinations, Outbound
from cloudadmin.kit.pagination import Paging
from cloudadmin.kit.redact import MASK
from cloudadmin.web.idempotency import KeyClaim

API_GROUP = "webhook_subscription"


def _out(row: SubscriptionRow) -> WebhookSubscription:
    return WebhookSubscription(
        id=row.id, url=row.url, auth_header_name=row.auth_header_name, auth_header_value=MASK
    )


def _checked(body: WebhookSubscriptionCreate, outbound: Outbound) -> None:
    problems = {
        "url": url_problems(body.url, outbound),
        "auth_header_name": header_name_problems(body.auth_header_name),
        "auth_header_value": header_value_problems(body.auth_header_value),
    }
    found = {name: msgs for name, msgs in problems.items() if msgs}
    if found:
        raise ValidationError(fields=found)


async def subscribe(
    session: AsyncSession,
    actor: Actor,
    to: Destinations,
    body: WebhookSubscriptionCreate,
    idempotency: KeyClaim,
) -> None:
    caller = actor.caller
    scoping.require_admin(caller)
    _checked(body, to.outbound)
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    existing = await repository.of_account(session, caller.account_id)
    refuse_another(existing, "webhook", "unsubscribe first.")
    row = SubscriptionRow(
        client_id=caller.account_id,
        url=body.url,
        auth_header_name=body.auth_header_name,
        auth_header_value_encrypted=to.box.encrypt(body.auth_header_value),
    )
    session.add(row)
    await session.flush()
    owner = user_actions.Owner(row.client_id, caller.account_reseller_id)
    # The value is masked by name (kit/redact.py) like every secret.
    data = body.model_dump()
    await user_actions.record_change(
        session, actor, owner, "create", Resource(API_GROUP, row.id), data
    )


async def unsubscribe(session: AsyncSession, actor: Actor) -> None:
    caller = actor.caller
    scoping.require_admin(caller)
    row = await repository.of_account(session, caller.account_id)
    if row is None:
        raise NotFound("The account has no webhook subscription.")
    owner = user_actions.Owner(row.client_id, caller.account_reseller_id)
    await user_actions.record_change(
        session, actor, owner, "delete", Resource(API_GROUP, row.id), {}
    )
    await session.delete(row)
    await session.flush()


async def list_(session: AsyncSession, caller: Caller, page: Paging) -> WebhookSubscriptionList:
    count, rows = await repository.list_visible(session, caller, page)
    return WebhookSubscriptionList(count=count, results=[_out(r) for r in rows])
