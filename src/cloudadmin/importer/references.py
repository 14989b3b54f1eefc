"""Second check: every reference names a record of the document or a stored row.

One query per referenced table (in chunks of ids), only for the ids the document
does not define itself, so a million addendums of a hundred clients cost one
small query, not a million lookups.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.db.models import Client
from cloudadmin.importer.catalogue import Catalogue
from cloudadmin.importer.id_index import IdIndex
from cloudadmin.importer.kinds import BY_KEY, KINDS
from cloudadmin.importer.problems import Problems
from cloudadmin.importer.rows import AccountInfo
from cloudadmin.kit.crypto import SecretBox

# Below SQLite's historical limit of 999 bound parameters per statement.
IN_CHUNK = 900

NOUNS = {
    "clients": "client",
    "users": "user",
    "sellers": "seller",
    "projects": "project",
    "regions": "region",
    "amqp_subscriptions": "AMQP subscription",
}


def _in_chunks(values: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) == IN_CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


async def _stored_accounts(conn: AsyncConnection, ids: list[Any]) -> dict[int, AccountInfo]:
    found: dict[int, AccountInfo] = {}
    for batch in _in_chunks(ids):
        rows = await conn.execute(
            select(Client.id, Client.client_type, Client.company_name).where(Client.id.in_(batch))
        )
        for ident, client_type, company in rows:
            found[ident] = AccountInfo(client_type, company)
    return found


async def _stored_ids(conn: AsyncConnection, target: str, ids: list[Any]) -> set[Any]:
    table = BY_KEY[target].table
    column = table.c[BY_KEY[target].table.primary_key.columns.keys()[0]]
    found: set[Any] = set()
    for batch in _in_chunks(ids):
        found.update((await conn.execute(select(column).where(column.in_(batch)))).scalars())
    return found


async def check_references(conn: AsyncConnection, catalogue: Catalogue, problems: Problems) -> None:
    """Adds a problem at each reference to nothing; learns stored accounts' facts."""
    for (target, reseller_only), by_id in catalogue.refs.items():
        in_document = catalogue.ids.get(target) or IdIndex()
        outside = [ident for ident in by_id if ident not in in_document]
        if target == "clients":
            catalogue.accounts.update(await _stored_accounts(conn, outside))
            stored: set[Any] = set(catalogue.accounts)
        else:
            stored = await _stored_ids(conn, target, outside)
        noun = NOUNS.get(target, target)
        for ident, ptr in by_id.items():
            if ident not in in_document and ident not in stored:
                problems.add(ptr, f"no {noun} with id {ident} in the document or the database")
            elif reseller_only and _not_reseller(catalogue, ident):
                problems.add(ptr, f"client {ident} is not a reseller account")
    await _check_unique(conn, catalogue, problems)


def check_sealed(catalogue: Catalogue, secret_box: SecretBox, problems: Problems) -> None:
    """Encrypted values copied from another database must open under this one's key,
    or the service could never use them (a broker password, a mail password)."""
    for ptr, token in catalogue.sealed:
        try:
            secret_box.decrypt(token)
        except ValueError:
            problems.add(ptr, "cannot be decrypted with this CLOUDADMIN_SECRET_KEY")


def _not_reseller(catalogue: Catalogue, ident: Any) -> bool:
    # An account of the document that failed validation is not known: its own
    # problems are reported, and nothing is said about its type.
    account = catalogue.accounts.get(ident)
    return account is not None and account.client_type != "reseller"


async def _check_unique(conn: AsyncConnection, catalogue: Catalogue, problems: Problems) -> None:
    """Values the database keeps unique must not collide with rows the document keeps.

    A stored row holding the value is a conflict unless it is the record itself,
    or a record the document rewrites as well (its value may change with it).
    """
    for kind in KINDS:
        in_document = catalogue.ids.get(kind.key) or IdIndex()
        for rule in kind.unique:
            taken = catalogue.unique.get((kind.key, rule.field), {})
            expr = rule.column(kind.table)
            for batch in _in_chunks(taken):
                stmt = select(kind.table.c.id, expr).where(expr.in_(batch))
                if rule.live is not None:
                    stmt = stmt.where(rule.live(kind.table))
                rows = await conn.execute(stmt)
                for stored_id, value in rows:
                    own_id, ptr = taken[value]
                    if stored_id != own_id and stored_id not in in_document:
                        noun = NOUNS.get(kind.key, kind.key)
                        problems.add(ptr, f"already used by stored {noun} {stored_id}")
