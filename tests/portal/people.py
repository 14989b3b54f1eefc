"""Who uses the portal in its tests: an operator, two resellers each with a client (one
tenant's id typed into the other's URL must give the 404 page), their users, a seller,
and a client user who is refused. One password for all."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.kit.crypto import hash_password
from tests.factories import groups_by_id, make_client, make_seller, make_user

PASSWORD = "a portal user's password"


@dataclass(frozen=True)
class People:
    """E-mails by kind (``emails["operator"]``), and the ids a test needs."""

    emails: dict[str, str]
    operator_account_id: int
    reseller_id: int  # the reseller whose user is emails["reseller"]
    client_id: int  # a client of that reseller; its user is emails["client"]
    other_reseller_id: int
    other_client_id: int  # a client of the other reseller: invisible to the first
    seller_id: int  # a seller of the first reseller, assigned to client_id
    user_ids: dict[str, int]


async def arrange_people(session: AsyncSession) -> People:
    hashed = hash_password(PASSWORD)
    groups = await groups_by_id(session, 1)
    # Added, then written in one flush (tests/factories.py, landscape).
    with session.no_autoflush:
        client_of = partial(make_client, session, flush=False)
        user_of = partial(make_user, session, flush=False, known_groups=groups)
        operator_account = await client_of()
        reseller = await client_of(client_type="reseller")
        other = await client_of(client_type="reseller")
        seller = await make_seller(
            session, reseller, activated=True, password_hash=hashed, flush=False
        )
        client = await client_of(reseller_id=reseller.id, seller_id=seller.id)
        other_client = await client_of(reseller_id=other.id)
        operator = await user_of(operator_account, superuser=True, password_hash=hashed)
        reseller_user = await user_of(reseller, password_hash=hashed)
        other_user = await user_of(other, password_hash=hashed)
        client_user = await user_of(client, password_hash=hashed)
    await session.commit()
    return People(
        emails={
            "operator": operator.email,
            "reseller": reseller_user.email,
            "other_reseller": other_user.email,
            "client": client_user.email,
            "seller": seller.email,
        },
        operator_account_id=operator_account.id,
        reseller_id=reseller.id,
        client_id=client.id,
        other_reseller_id=other.id,
        other_client_id=other_client.id,
        seller_id=seller.id,
        user_ids={
            "operator": operator.id,
            "reseller": reseller_user.id,
            "other_reseller": other_user.id,
            "client": client_user.id,
        },
    )


def token_of(page: str) -> str:
    """The CSRF token of a page's first form."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """Signs the client in over HTTP; the session's CSRF token, for its forms."""
    form = await client.get("/portal/sign-in")
    assert form.status_code == 200, form.text
    r = await client.post(
        "/portal/sign-in",
        data={"email": email, "password": password, "csrf_token": token_of(form.text)},
    )
    assert r.status_code == 303, r.text
    home = await client.get("/portal/")
    return token_of(home.text)
