"""POST /iam/users: a new common account under a reseller and its first user."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor
from cloudadmin.db.models import Client, User
from cloudadmin.db.models.accounts import ADMINISTRATORS
from cloudadmin.errors import Conflict, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.iam.clients import products
from cloudadmin.iam.clients import repository as accounts
from cloudadmin.iam.clients.service import COMPANY_TAKEN, embedded_user
from cloudadmin.iam.owning_reseller import owning_reseller
from cloudadmin.iam.users import repository
from cloudadmin.iam.users.passwords import password_problems
from cloudadmin.iam.users.schemas import ClientAndRoles, UserCreate, UserCreated
from cloudadmin.iam.users.schemas import User as UserOut
from cloudadmin.web.idempotency import KeyClaim

EMAIL_TAKEN = "user with this email already exists."


def present(user: User, account: Client) -> UserOut:
    """The provider's User: a user has one account, so one client_and_roles entry."""
    return UserOut(
        **embedded_user(user, account).model_dump(),
        user_type=user.user_type,
        is_active=user.is_active,
        client_and_roles=[
            ClientAndRoles(
                client_id=account.id,
                client_company_name=account.company_name,
                user_roles=[str(g.id) for g in user.groups],
                user_id=user.id,
            )
        ],
    )


def created_user(user: User, account: Client) -> UserCreated:
    return UserCreated(**present(user, account).model_dump())


def check_password(password: str, email: str) -> None:
    problems = password_problems(password, email=email)
    if problems:
        raise ValidationError(fields={"password": problems})


async def create(
    session: AsyncSession, actor: Actor, body: UserCreate, idempotency: KeyClaim
) -> UserCreated:
    caller = actor.caller
    new_client = "Name the reseller account of the new client."
    reseller = await owning_reseller(session, caller, body.reseller, missing=new_client)
    check_password(body.password, body.email)
    if body.seller is not None:
        seller = await accounts.get_seller(session, body.seller)
        if seller is None or seller.reseller_id != reseller.id:
            raise ValidationError.field("seller", "Not one of the reseller's sellers.")
    # Every check of the caller has passed: only now may a repeated key replay.
    await idempotency.claim()
    await accounts.lock_identities(session)
    if await accounts.company_taken(session, body.company):
        raise ValidationError.field("company", COMPANY_TAKEN)
    if await accounts.email_taken(session, body.email):
        raise Conflict(fields={"email": [EMAIL_TAKEN]})
    admins = await repository.get_group(session, ADMINISTRATORS)
    assert admins is not None  # seeded by the initial migration

    personal: dict[str, bool] = {
        s.product_name: s.available for s in body.services or [] if s.available is not None
    }
    available = products.effective_availability(personal, reseller.service_availability)
    statuses = products.initial_service_statuses(available)
    account = Client(
        email=body.email,
        name=body.name,
        phone=body.phone,
        company_name=body.company,
        custom_id=body.custom_id,
        country_code=body.country_code,
        is_test=body.is_test,
        reseller_id=reseller.id,
        seller_id=body.seller,
        client_type="common",
        owner=caller.user_id,
        deleted=False,
        bill_type="postpaid",
        signup_process=None,
        entry_base_domain=await accounts.entry_base_domain(session, reseller.id),
        service_availability=personal,
        capabilities=products.capabilities(available),
        service_statuses=statuses,
        status=products.derive_account_status(statuses),
        paid_features={},
        free_features={},
    )
    session.add(account)
    await session.flush()
    user = await repository.add_user(
        session,
        account,
        admins,
        email=body.email,
        password=body.password,
        name=body.name,
        phone=body.phone,
        lang=body.lang,
    )
    await user_actions.record(
        session,
        actor,
        action_type="create",
        api_group="user",
        resources=[Resource("client", account.id), Resource("user", user.id)],
        client_id=account.id,
        reseller_id=reseller.id,
        action_data=body.model_dump(mode="json", exclude={"password"}, exclude_unset=True),
    )
    return created_user(user, account)
