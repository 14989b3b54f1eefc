"""Loading a landscape document (docs/import.md) into the database.

Three passes: validate every record, check every reference (against the
document and the stored rows), then upsert chunk by chunk. Problems found by the
first two passes raise LoadError before anything is written; the caller owns the
transaction and commits or rolls back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.db.dialect import continue_sequences
from cloudadmin.importer.catalogue import chunks, record_count, records_of, survey
from cloudadmin.importer.kinds import KINDS
from cloudadmin.importer.problems import Problems
from cloudadmin.importer.progress import NO_PROGRESS, PhaseProgress
from cloudadmin.importer.references import check_references, check_sealed
from cloudadmin.importer.rows import RowContext
from cloudadmin.importer.writer import replace_memberships, upsert_rows
from cloudadmin.kit.crypto import SecretBox


@dataclass(frozen=True)
class LoadReport:
    """How many records of each top-level key were upserted."""

    counts: dict[str, int] = field(default_factory=dict)
    # The summary's verb: `cloudadmin export` reports its records the same way.
    done: ClassVar[str] = "loaded"

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        parts = [f"{key} {n}" for key, n in self.counts.items() if n]
        return f"{self.done} {self.total} records" + (f" ({', '.join(parts)})" if parts else "")


async def load_document(
    session: AsyncSession,
    document: dict[str, Any],
    secret_box: SecretBox,
    progress: PhaseProgress = NO_PROGRESS,
) -> LoadReport:
    """Validate ``document`` completely, then upsert it in ``session`` without committing.

    Raises LoadError (with every problem found, as JSON pointers) before writing
    anything when the document is not valid: field problems, and reference problems
    of the records whose fields are valid, in one run.
    """
    problems = Problems()
    total = record_count(document)
    progress.phase("validating", total)
    catalogue = survey(document, problems, progress)
    if not catalogue.complete:
        problems.raise_if_any()

    await session.flush()  # pending ORM changes must be visible to the checks
    conn = await session.connection()
    referenced = sum(len(ids) for ids in catalogue.refs.values())
    progress.phase("checking references", referenced, unit="ids")
    await check_references(conn, catalogue, problems)
    check_sealed(catalogue, secret_box, problems)
    progress.advance(referenced)
    problems.raise_if_any()

    context = RowContext(secret_box=secret_box, accounts=catalogue.accounts)
    bulk = bulk_counts.deferrable(conn, catalogue.counts.get("addendums", 0))
    if bulk:
        await bulk_counts.defer_counting(conn)
    progress.phase("writing", total)
    for kind in KINDS:
        for _start, chunk in chunks(records_of(document, kind)):
            records = kind.adapter.validate_python(chunk)
            await upsert_rows(conn, kind.table, [kind.to_row(rec, context) for rec in records])
            if kind.key == "users":
                await replace_memberships(conn, {rec.id: rec.group_ids() for rec in records})
            progress.advance(len(chunk))
    if bulk:
        await bulk_counts.rebuild_counts(conn)
    await continue_sequences(conn, [kind.table for kind in KINDS if catalogue.counts.get(kind.key)])
    # Rows were written past the ORM; objects the session holds may be stale.
    session.expire_all()
    return LoadReport(dict(catalogue.counts))

