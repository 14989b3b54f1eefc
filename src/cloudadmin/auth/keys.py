"""Creating API keys (the CLI's `apikey create`)."""

from __future__ import annotations

from sqlalchemy import select

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine, create_sessionmaker
from cloudadmin.db.models import ApiKey, User
from cloudadmin.kit.crypto import hash_api_secret, new_api_secret


async def create_key(settings: Settings, *, user_id: int, name: str | None = None) -> str:
    """Stores a new key for the user and returns ``<id>_<secret>``, shown only once."""
    engine = create_engine(settings)
    try:
        async with create_sessionmaker(engine)() as session, session.begin():
            user = (
                await session.execute(
                    select(User).where(User.id == user_id, User.deleted.is_(False))
                )
            ).scalar_one_or_none()
            if user is None:
                raise LookupError(f"no user with id {user_id}")
            key = ApiKey(user_id=user.id, name=name, secret_hash="")
            session.add(key)
            await session.flush()  # the id is part of the hash
            secret = new_api_secret()
            key.secret_hash = hash_api_secret(key.id, secret)
        return f"{key.id}_{secret}"
    finally:
        await engine.dispose()
