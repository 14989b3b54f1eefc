"""Client accounts: presentation and the partial update (docs/access.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import Client as ClientRow
from cloudadmin.db.models import User
from cloudadmin.db.models.accounts import ADMINISTRATORS
from cloudadmin.errors import NotFound, PermissionDenied, ValidationError
from cloudadmin.events import mail, user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.clients import products, repository
from cloudadmin.iam.clients.schemas import Client, ClientPatch, EmbeddedUser, GroupOut
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.from_row import from_row

COMPANY_TAKEN = "Company with this name already exists"
NOT_FOUND = "Account not found."
# Fields only an operator, or a reseller for its clients, may change.
PRIVILEGED = frozenset({"reseller", "seller", "is_test"})
# Wire name -> column.
_COLUMNS = {
    "email": "email",
    "companyName": "company_name",
    "custom_id": "custom_id",
    "name": "name",
    "phone": "phone",
    "reseller": "reseller_id",
    "seller": "seller_id",
    "is_test": "is_test",
}


def provider_id(account: ClientRow) -> int:
    """The services provider of an account's users: its reseller, else itself."""
    return account.reseller_id if account.reseller_id is not None else account.id


def embedded_user(user: User, account: ClientRow) -> EmbeddedUser:
    return from_row(
        EmbeddedUser,
        user,
        company=user.company or account.company_name,
        reseller=provider_id(account),
        client=account.id,
        groups=[GroupOut(id=g.id, name=g.name) for g in user.groups],
        auth_types=list(user.auth_types or []),
    )


async def present(session: AsyncSession, account: ClientRow, caller: Caller) -> Client:
    users = await repository.account_users(session, account.id)
    return presented(account, users, caller)


def presented(account: ClientRow, users: Sequence[User], caller: Caller) -> Client:
    """The Client of ``account``, whose users (not deleted, by id) are ``users``."""
    statuses = products.complete_service_statuses(account.service_statuses, account.capabilities)
    return Client.model_validate(
        {
            "id": account.id,
            "email": account.email,
            "name": account.name,
            "status": account.status,
            "companyName": account.company_name,
            "currentUser": caller.user_id,
            "capabilities": list(account.capabilities or []),
            "serviceStatuses": statuses,
            "paidFeatures": account.paid_features or {},
            "freeFeatures": account.free_features or {},
            "entryBaseDomain": account.entry_base_domain,
            "deleted": account.deleted,
            "bill_type": account.bill_type,
            "is_test": account.is_test,
            "has_active_admin": any(u.is_active and ADMINISTRATORS in u.group_ids for u in users),
            "users": [embedded_user(u, account) for u in users],
            "phone": account.phone,
            "website": account.website,
            "signup_process": account.signup_process,
            "custom_id": account.custom_id,
            "country_code": account.country_code,
            "seller": account.seller_id,
            "resellers": account.reseller_id,
            "client_type": account.client_type,
            "owner": account.owner,
        }
    )


def _check_role(caller: Caller, account: ClientRow, sent: set[str]) -> None:
    """Member: 403. Client administrator: its own account, without the privileged
    fields. Reseller: privileged fields only on its clients, not on itself."""
    if caller.is_operator:
        return
    if caller.is_member:
        raise PermissionDenied()
    on_own_account = account.id == caller.account_id
    if sent & PRIVILEGED and (not caller.is_reseller or on_own_account):
        names = ", ".join(sorted(sent & PRIVILEGED))
        raise PermissionDenied(f"Only an operator or the reseller may change: {names}.")


async def _validated_changes(
    session: AsyncSession, caller: Caller, account: ClientRow, body: ClientPatch
) -> dict[str, Any]:
    sent = body.sent()
    reseller_id = account.reseller_id
    if "reseller" in sent:
        reseller = await repository.get_reseller(session, sent["reseller"])
        mine = caller.is_operator or (reseller is not None and reseller.id == caller.account_id)
        if reseller is None or not mine or reseller.id == account.id:
            raise ValidationError.field("reseller", "Not a reseller account.")
        reseller_id = reseller.id
    if sent.get("seller") is not None:
        seller = await repository.get_seller(session, sent["seller"])
        if seller is None or seller.reseller_id != reseller_id:
            raise ValidationError.field("seller", "Not one of the reseller's sellers.")
    elif "seller" not in sent and reseller_id != account.reseller_id and account.seller_id:
        # A new reseller: a seller of the former one no longer fits and is unassigned.
        seller = await repository.get_seller(session, account.seller_id)
        if seller is None or seller.reseller_id != reseller_id:
            sent["seller"] = None
    if "companyName" in sent and fold(sent["companyName"]) != account.company_name_folded:
        await repository.lock_identities(session)
        if await repository.company_taken(session, sent["companyName"], except_id=account.id):
            raise ValidationError.field("companyName", COMPANY_TAKEN)
    return {
        wire: value for wire, value in sent.items() if getattr(account, _COLUMNS[wire]) != value
    }


async def update(session: AsyncSession, actor: Actor, client_id: int, body: ClientPatch) -> Client:
    caller = actor.caller
    account = await repository.get_visible(session, caller, client_id, for_change=True)
    if account is None:
        raise NotFound(NOT_FOUND)
    _check_role(caller, account, set(body.model_fields_set))
    changes = await _validated_changes(session, caller, account, body)
    for wire, value in changes.items():
        setattr(account, _COLUMNS[wire], value)
    await session.flush()
    if "companyName" in changes:
        await repository.rename_users_company(session, account.id, changes["companyName"])
    if changes:
        resource = Resource("client", account.id)
        await user_actions.record_change(session, actor, account, "update", resource, changes)
    return await present(session, account, caller)


async def request_deletion(session: AsyncSession, actor: Actor, client_id: int) -> None:
    """Marks the account deleted (its users and keys stop working at once), records the
    user action and queues the reseller's `deletion_request` mails, in one transaction.

    Client administrators for their own account; resellers for their clients (not for
    themselves); operators for any account.
    """
    caller = actor.caller
    account = await repository.get_visible(session, caller, client_id, for_change=True)
    if account is None:
        raise NotFound(NOT_FOUND)
    if not caller.is_operator and (
        caller.is_member or (caller.is_reseller and account.id == caller.account_id)
    ):
        raise PermissionDenied()
    account.deleted = True
    await session.flush()
    resource = Resource("client", account.id)
    await user_actions.record_change(session, actor, account, "delete", resource, {"deleted": True})
    await mail.enqueue_deletion_request(session, account, caller.user_email)
