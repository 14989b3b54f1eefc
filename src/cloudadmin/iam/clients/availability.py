"""An account's personal product availability (the provider's "Products" tab of an
account, docs/portal.md "Accounts"): per product available, not available, or the
reseller's default, as POST /iam/users stores it at creation (docs/iam.md).

Who may change it follows PATCH /iam/clients/{id}'s privileged fields (docs/access.md):
an operator, or a reseller for its clients; anyone else 403, another tenant's account
404. ``capabilities`` and each service's ``enabled`` follow the new availability; the
services' statuses stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.errors import NotFound, PermissionDenied, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.clients import products, repository
from cloudadmin.iam.clients.schemas import Client
from cloudadmin.iam.clients.service import NOT_FOUND, present


async def personal(session: AsyncSession, caller: Caller, client_id: int) -> dict[str, bool]:
    """The account's own choices, by product (a product left out: the reseller's
    default); another tenant's account is 404."""
    account = await repository.get_visible(session, caller, client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    return dict(account.service_availability or {})


async def _reseller_default(session: AsyncSession, reseller_id: int | None) -> dict[str, bool]:
    """The reseller's default availability (its own map), every product named."""
    reseller = None if reseller_id is None else await repository.get_reseller(session, reseller_id)
    default = reseller.service_availability if reseller is not None else None
    return products.effective_availability({}, default)


async def set_availability(
    session: AsyncSession, actor: Actor, client_id: int, wanted: Mapping[str, bool | None]
) -> Client:
    """``wanted``: per product True, False, or None (the reseller's default); a product
    left out keeps its personal value."""
    caller = actor.caller
    account = await repository.get_visible(session, caller, client_id, for_change=True)
    if account is None:
        raise NotFound(NOT_FOUND)
    if not caller.is_operator and (not caller.is_reseller or account.id == caller.account_id):
        raise PermissionDenied("Only an operator or the reseller may change: services.")
    unknown = sorted(set(wanted) - set(products.ACCOUNT_PRODUCTS))
    if unknown:
        raise ValidationError.field("services", f"Not a product: {', '.join(unknown)}.")
    personal = dict(account.service_availability or {})
    for product, value in wanted.items():
        if value is None:
            personal.pop(product, None)
        else:
            personal[product] = value
    if personal == (account.service_availability or {}):
        return await present(session, account, caller)
    default = await _reseller_default(session, account.reseller_id)
    available = products.effective_availability(personal, default)
    statuses = products.complete_service_statuses(account.service_statuses, account.capabilities)
    for key, status in statuses.items():
        status["enabled"] = available.get(key, False)
    account.service_availability = personal
    account.capabilities = products.capabilities(available)
    account.service_statuses = statuses
    await session.flush()
    resource = Resource("client", account.id)
    await user_actions.record_change(
        session, actor, account, "update", resource, {"service_availability": personal}
    )
    return await present(session, account, caller)
