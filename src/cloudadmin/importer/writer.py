"""Writing rows: batched upserts and the replacement of users' group membership."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Table, delete
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.db.dialect import upsert
from cloudadmin.db.models import user_groups
from cloudadmin.importer.rows import Row


async def upsert_rows(conn: AsyncConnection, table: Table, rows: Sequence[Row]) -> None:
    """One executemany per shape of row.

    Rows of one statement must carry the same keys, and the keys decide what an
    update overwrites (a row without ``created_at`` keeps the stored one), so rows
    are grouped by their key set; almost always there is one group.
    """
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    for columns, batch in groups.items():
        await conn.execute(upsert(conn.dialect.name, table, columns), batch)


async def replace_memberships(conn: AsyncConnection, memberships: dict[int, list[int]]) -> None:
    """A user's groups become exactly the document's list (the one replacing write)."""
    if not memberships:
        return
    user_ids = list(memberships)
    for start in range(0, len(user_ids), 900):
        batch = user_ids[start : start + 900]
        await conn.execute(delete(user_groups).where(user_groups.c.user_id.in_(batch)))
    pairs = [
        {"user_id": user_id, "group_id": group_id}
        for user_id, group_ids in memberships.items()
        for group_id in group_ids
    ]
    if pairs:
        await conn.execute(user_groups.insert(), pairs)
