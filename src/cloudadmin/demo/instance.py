"""The demo's own database: seeded once, kept across starts, refused elsewhere.

`serve --demo` loads the demo landscape only into an empty database or one the demo
made (marked by an ``instance_marks`` row named ``demo``); anything else is somebody's
data, which the landscape would overwrite (clients renamed, users replaced, keys
revoked), so it is refused before even the schema is migrated.

The landscape is seeded once; later starts keep the data as the API left it and print
the same keys. API keys are stored hashed, so the tokens themselves are kept in the
mark, encrypted with the secret box (the key that encrypts every stored secret). Why
not derive them from the secret key: the tokens stay as random as every other key's,
a reset needs nothing but a new value in the mark, and without the secret key the
stored value is as useless as a stored mail password.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from sqlalchemy import column, delete, inspect, literal, select, table
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from cloudadmin.db.base import Base
from cloudadmin.db.engine import create_sessionmaker
from cloudadmin.db.models import ApiKey, InstanceMark, Listener, Project, Seller
from cloudadmin.db.types import utcnow
from cloudadmin.demo.history import CloudExample
from cloudadmin.demo.landscape import CLIENTS, PASSWORD, SELLER_WITH_PASSWORD, build_demo
from cloudadmin.demo.local_services import LocalServices
from cloudadmin.importer.loader import load_document
from cloudadmin.kit.crypto import SecretBox, hash_password, secret_matches

DEMO_MARK = "demo"
# Tables that hold rows in a database nobody has used yet: the migrations' own and
# their seeded groups, and the marks.
BOOKKEEPING = frozenset({"alembic_version", "groups", InstanceMark.__tablename__})


class DemoRefused(Exception):
    """The database is not the demo's; one line for the person who started it."""


class State(StrEnum):
    empty = "empty"
    demo = "demo"
    foreign = "foreign"


@dataclass(frozen=True)
class Survey:
    state: State
    # A table holding rows the demo did not make (state foreign).
    table: str | None = None


@dataclass(frozen=True)
class DemoStart:
    """What a start did: seeded (and with what) or kept; the keys to print."""

    keys: dict[str, str]
    made_at: datetime
    # What the probe found when this start seeded; None: the data was kept.
    services: LocalServices | None
    # Kinds whose key no longer authenticates (revoked, expired or replaced via the API).
    invalid: frozenset[str] = field(default_factory=frozenset)
    # A listener of the first client's to read (None: the API has left it none).
    example: CloudExample | None = None


async def survey(conn: AsyncConnection) -> Survey:
    """Empty, the demo's, or somebody else's: reads only, on any schema version."""
    tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
    if InstanceMark.__tablename__ in tables:
        marks = table(InstanceMark.__tablename__, column("name"))
        found = await conn.execute(
            select(literal(1)).select_from(marks).where(marks.c.name == DEMO_MARK)
        )
        if found.first() is not None:
            return Survey(State.demo)
    for name in sorted(tables):
        if name in BOOKKEEPING:
            continue
        if (await conn.execute(select(literal(1)).select_from(table(name)).limit(1))).first():
            return Survey(State.foreign, name)
    return Survey(State.empty)


def refusal(where: str, found: Survey) -> DemoRefused:
    return DemoRefused(
        f"{where} holds data the demo did not make (table {found.table} has rows); the demo "
        "loads only into an empty database or its own: leave CLOUDADMIN_DATABASE_URL unset "
        "(the demo then uses demo.db in the data directory) or name an empty database"
    )


async def check_database(engine: AsyncEngine, where: str) -> Survey:
    """Before migrating: refuse somebody else's database while it is still untouched."""
    async with engine.connect() as conn:
        found = await survey(conn)
    if found.state is State.foreign:
        raise refusal(where, found)
    return found


async def start_demo(
    engine: AsyncEngine,
    box: SecretBox,
    where: str,
    *,
    reset: bool,
    probe: Callable[[], LocalServices],
) -> DemoStart:
    """Seeds an empty database (or, with ``reset``, the demo's own anew); otherwise finds
    the demo's keys again. One transaction: a failed seed leaves nothing behind.

    ``probe`` looks for a local broker and mail server; it runs only when seeding, since
    a kept landscape keeps its destinations."""
    async with create_sessionmaker(engine)() as session, session.begin():
        conn = await session.connection()
        found = await survey(conn)
        if found.state is State.foreign:
            raise refusal(where, found)
        if found.state is State.demo and not reset:
            mark = await session.get(InstanceMark, DEMO_MARK)
            assert mark is not None
            keys = _open_keys(box, mark.value)
            return DemoStart(
                keys,
                made_at=mark.created_at,
                services=None,
                invalid=await _invalid_kinds(session, keys),
                example=await _cloud_example(session),
            )
        if found.state is State.demo:
            await _wipe(session)
        services = probe()
        document, keys = build_demo(amqp_url=services.amqp_url, smtp=services.smtp)
        await load_document(session, document, box)
        await _seller_signs_in(session)
        now = utcnow()
        session.add(
            InstanceMark(name=DEMO_MARK, value=box.encrypt(json.dumps(keys)), created_at=now)
        )
        example = await _cloud_example(session)
    return DemoStart(keys, made_at=now, services=services, example=example)


async def _seller_signs_in(session: AsyncSession) -> None:
    """The demo's seller signs in to the Admin Portal with the demo's password, as if it
    had set it through its invitation's link (iam/sellers/access.set_password): the
    import carries no seller passwords."""
    seller = await session.get(Seller, SELLER_WITH_PASSWORD)
    assert seller is not None and seller.activated
    seller.password_hash = hash_password(PASSWORD)
    await session.flush()


async def _cloud_example(session: AsyncSession) -> CloudExample | None:
    """The first client's listener with the lowest port (read from the database: a kept
    landscape may have renamed it)."""
    client = CLIENTS[0]
    found = (
        await session.execute(
            select(Listener.project_id, Listener.region_id, Listener.id, Listener.name)
            .join(Project, Project.id == Listener.project_id)
            .where(Project.client_id == client)
            .order_by(Listener.protocol_port, Listener.name, Listener.id)
            .limit(1)
        )
    ).first()
    if found is None:
        return None
    project_id, region_id, listener_id, name = found
    return CloudExample(client, project_id, region_id, listener_id, name)


def _open_keys(box: SecretBox, value: str) -> dict[str, str]:
    try:
        keys: dict[str, str] = json.loads(box.decrypt(value))
    except ValueError as exc:
        raise DemoRefused(
            "the demo's keys cannot be decrypted with this secret key (was "
            "CLOUDADMIN_SECRET_KEY or secret.key changed?); start with --reset to seed anew"
        ) from exc
    return keys


async def _invalid_kinds(session: AsyncSession, keys: dict[str, str]) -> frozenset[str]:
    now = utcnow()
    invalid = set()
    for kind, token in keys.items():
        key_id, _, secret = token.partition("_")
        row = await session.get(ApiKey, int(key_id))
        if (
            row is None
            or row.revoked
            or not secret_matches(row.id, secret, row.secret_hash)
            or (row.expires_at is not None and row.expires_at <= now)
        ):
            invalid.add(kind)
    return frozenset(invalid)


async def _wipe(session: AsyncSession) -> None:
    """Everything in the demo's database goes (it was all made by the demo or through
    its API), except what the migrations seeded. Foreign keys are checked at commit."""
    for model_table in reversed(Base.metadata.sorted_tables):
        if model_table.name not in BOOKKEEPING or model_table.name == InstanceMark.__tablename__:
            await session.execute(delete(model_table))
