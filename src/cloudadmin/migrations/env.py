"""Alembic environment: async engines for SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import warnings

from alembic import context
from sqlalchemy.engine import Connection

from cloudadmin.config import get_settings
from cloudadmin.db import models  # noqa: F401  (registers every table)
from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_engine

# SQLite cannot reflect expression indexes (lower(email)); batch mode reflects tables
# and would say so on every start. The indexes are created and dropped explicitly.
warnings.filterwarnings("ignore", message="Skipped unsupported reflection of expression-based")

config = context.config
target_metadata = Base.metadata


# Several service processes may start at once against one PostgreSQL: one migrates,
# the others wait for it and then find nothing to do.
_MIGRATION_LOCK = 0x636C6F7564  # "cloud"


def _configure(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode copies tables instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_engine(get_settings(), url)
    async with engine.connect() as connection:
        await connection.run_sync(_configure)
        await connection.commit()
    await engine.dispose()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:  # called by code that already holds a connection
        _configure(connection)
        return
    url = config.get_main_option("sqlalchemy.url") or get_settings().effective_database_url
    asyncio.run(_run_async(url))


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `cloudadmin migrate`")
run()
