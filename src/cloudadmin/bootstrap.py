"""`cloudadmin init`: the operator of a new database, without a hand-written document.

An operator is a user with ``superuser`` (docs/access.md). Its home account and the
user are made by the importer, from the records an operator would otherwise write by
hand (docs/import.md: a reseller account, an Administrators user with ``superuser``
and a password, stored hashed); its first API key by the API tokens' service, as
`cloudadmin apikey create` makes one. All in one transaction: a refused or failed
init leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine, create_sessionmaker
from cloudadmin.db.models import Client, User
from cloudadmin.iam.api_tokens.service import issue_key
from cloudadmin.importer.loader import load_document
from cloudadmin.kit.crypto import SecretBox, configure_password_hashing


class AlreadyInitialised(Exception):
    """The database has an operator already."""


@dataclass(frozen=True, slots=True)
class Operator:
    account_id: int
    user_id: int
    email: str
    key: str  # <id>_<secret>: shown once, only its hash is stored


async def initialise(
    settings: Settings, *, email: str, password: str, company: str, key_name: str
) -> Operator:
    """Makes the operator's account, user and first API key; AlreadyInitialised when a
    user with ``superuser`` exists (deleted or not: a database has had its operator).
    The importer's LoadError (an invalid e-mail, say) passes through."""
    configure_password_hashing(settings.password_hash_time_cost, settings.password_hash_memory_kib)
    engine = create_engine(settings)
    try:
        async with create_sessionmaker(engine)() as session, session.begin():
            return await _initialise(
                session, SecretBox(*settings.secret_keys()), email, password, company, key_name
            )
    finally:
        await engine.dispose()


async def _initialise(
    session: AsyncSession,
    box: SecretBox,
    email: str,
    password: str,
    company: str,
    key_name: str,
) -> Operator:
    operator = await session.scalar(select(User.email).where(User.superuser.is_(True)).limit(1))
    if operator is not None:
        raise AlreadyInitialised(f"the database has an operator already ({operator})")
    # New ids past any there are: init also works on a database loaded without one.
    account_id = (await session.scalar(select(func.max(Client.id))) or 0) + 1
    user_id = (await session.scalar(select(func.max(User.id))) or 0) + 1
    document = {
        "clients": [
            {"id": account_id, "email": email, "companyName": company, "client_type": "reseller"}
        ],
        "users": [
            {
                "id": user_id,
                "email": email,
                "client": account_id,
                "groups": ["Administrators"],
                "superuser": True,
                "password": password,
            }
        ],
    }
    await load_document(session, document, box)
    user = await session.get_one(User, user_id)
    _, key = await issue_key(session, user, name=key_name)
    return Operator(account_id=account_id, user_id=user_id, email=email, key=key)
