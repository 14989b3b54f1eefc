"""Loading a landscape document (docs/import.md) into the database.

Three passes: validate every record, check every reference (against the
document and the stored rows), then upsert chunk by chunk. Problems found by the
first two passes raise LoadError before anything is written; the caller owns the
transaction and commits or rolls back.

A large load of addendums into their empty table on PostgreSQL (importer/bulk.py)
writes them during the first pass instead, by COPY, inside a savepoint that a
problem found later rolls back: nothing of it stays either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.db.dialect import continue_sequences
from cloudadmin.importer import addendum_copy, fast_json
from cloudadmin.importer.bulk import BulkLoad
from cloudadmin.importer.catalogue import (
    Catalogue,
    check_keys,
    chunks,
    note_copied,
    open_catalogue,
    record_count,
    records_of,
    survey_chunk,
)
from cloudadmin.importer.document_parts import STREAMED_KEY, StreamedRecords
from cloudadmin.importer.kinds import BY_KEY, KINDS, Kind
from cloudadmin.importer.problems import Problems
from cloudadmin.importer.progress import NO_PROGRESS, PhaseProgress
from cloudadmin.importer.references import check_references, check_sealed
from cloudadmin.importer.rows import Row, RowContext
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

    Raises LoadError (with every problem found, as JSON pointers) when the document
    is not valid: field problems, and reference problems of the records whose fields
    are valid, in one run. Nothing is written then (a bulk load's rows are taken
    back with its savepoint), even if the caller's transaction goes on.

    A document read in parts (importer/document_parts.py) is read whole here unless
    its addendums go in by COPY; if a part cannot be read after all, ``Unstreamable``
    propagates and the caller reads the document whole and loads it again.
    """
    await session.flush()  # pending ORM changes must be visible to the checks
    conn = await session.connection()
    stream = document.get(STREAMED_KEY) if isinstance(document, dict) else None
    if not isinstance(stream, StreamedRecords):
        stream = None
    elif not bulk_counts.deferrable(conn, stream.count):
        document, stream = stream.settled(), None
    # A document read in parts holds enough addendums for a bulk load in its first parts.
    addendums = stream.count if stream is not None else _addendum_count(document)
    if not bulk_counts.deferrable(conn, addendums):
        report = await _run(conn, document, secret_box, progress, None)
    else:
        # A bulk load may write addendums before the last problem is found, and sets
        # the table's indexes aside: a savepoint takes all of it back on a problem.
        async with session.begin_nested():
            await session.connection()  # emits the SAVEPOINT before the first statement
            bulk = await BulkLoad.start(conn, BY_KEY[STREAMED_KEY].table)
            if bulk is None and stream is not None:  # the table holds rows: upserted
                document = stream.settled()
            try:
                report = await _run(conn, document, secret_box, progress, bulk)
            finally:
                if bulk is not None:
                    bulk.close()
    # Rows were written past the ORM; objects the session holds may be stale.
    session.expire_all()
    return report


def _addendum_count(document: Any) -> int:
    records = document.get(STREAMED_KEY) if isinstance(document, dict) else None
    return len(records) if isinstance(records, list) else 0


async def _run(
    conn: AsyncConnection,
    document: dict[str, Any],
    secret_box: SecretBox,
    progress: PhaseProgress,
    bulk: BulkLoad | None,
) -> LoadReport:
    problems = Problems()
    progress.phase("validating", record_count(document))
    catalogue = open_catalogue(document, problems)
    if not catalogue.complete:
        problems.raise_if_any()
    context = RowContext(secret_box=secret_box, accounts=catalogue.accounts)
    await _Load(conn, document, catalogue, problems, progress, context, bulk).run()
    return LoadReport(dict(catalogue.counts))


@dataclass
class _Load:
    conn: AsyncConnection
    document: dict[str, Any]
    catalogue: Catalogue
    problems: Problems
    progress: PhaseProgress
    context: RowContext
    # Set when the addendums go in by COPY into their empty table (importer/bulk.py).
    bulk: BulkLoad | None = None

    async def run(self) -> None:
        if self.bulk is None:
            fast_json.settle(self.document)  # the models read the addendums as dicts
        await self.validate()
        await self.check()
        await self.write()
        if self.bulk is not None:
            self.progress.phase("indexing", None)
            await self.bulk.finish()

    async def validate(self) -> None:
        """Pass 1: every record's fields. A bulk load also COPYs the valid addendums
        as long as no problem has turned up (once one has, nothing is committed).

        Addendums read in parts from the file come with the keys that followed them
        there; those are checked after them."""
        bulk = self.bulk
        pending = list(KINDS)
        while pending:
            kind = pending.pop(0)
            records = records_of(self.document, kind)
            if bulk is not None and kind.table is bulk.table:
                await bulk.copy(addendum_copy.COLUMNS, self.copy_rows(kind, chunks(records)))
                if isinstance(records, StreamedRecords):
                    pending += self.take_after(records, done=list(KINDS[: KINDS.index(kind)]))
                continue
            for start, chunk in chunks(records):
                survey_chunk(self.catalogue, kind, start, chunk, self.problems)
                self.progress.advance(len(chunk))

    def take_after(self, records: StreamedRecords, done: list[Kind]) -> list[Kind]:
        """Puts the keys that followed the streamed records into the document; returns
        the kinds checked already that they hold (to be checked now)."""
        self.document[STREAMED_KEY] = []  # every record went by
        self.document.update(records.after)
        known = len(self.problems)
        check_keys(records.after, self.problems)
        if len(self.problems) > known:  # as a whole document's shape problems do
            self.problems.raise_if_any()
        counts = self.catalogue.counts
        counts[STREAMED_KEY] = records.count
        for key, value in records.after.items():
            counts[key] = len(value or [])
        return [kind for kind in done if kind.key in records.after]

    def copy_rows(
        self, kind: Kind, parts: Iterator[tuple[int, list[Any]]]
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The COPY rows of a bulk load's addendums, validated and given chunk by
        chunk; none once a problem has turned up (the rest is still validated, for its
        problems).

        The plain check (importer/addendum_copy.py) builds the COPY tuples of a chunk
        of plainly valid addendums in one step; any other chunk is validated by the
        models, so its problems read as they always have. The chunk's addendums may be
        structs (importer/fast_json.py), which the models see as dicts again.

        A plain generator: the COPY takes its rows as they come and sends them while
        the server stores the ones before (its socket's buffer holds them; the driver
        waits only when the server falls behind). Fed through an async generator, with
        each chunk checked in a thread, the rows cost about 0.2 µs more each for the
        iteration alone, and the thread gained nothing: the check holds the GIL."""
        columns = addendum_copy.COLUMNS
        for start, chunk in parts:
            rows = addendum_copy.copy_tuples(chunk)
            if rows is not None:
                note_copied(self.catalogue, kind, start, columns, rows, self.problems)
            else:
                known = len(self.problems)
                valid = survey_chunk(
                    self.catalogue, kind, start, fast_json.plain(chunk), self.problems
                )
                if len(self.problems) == known:
                    addendum_copy.note_fallback(start, len(chunk))
                rows = [_in_order(kind.to_row(rec, self.context), columns) for rec in valid]
            self.progress.advance(len(chunk))
            if not self.problems:
                yield rows

    async def check(self) -> None:
        """Pass 2: references and unique values; raises LoadError with every problem."""
        referenced = sum(len(ids) for ids in self.catalogue.refs.values())
        self.progress.phase("checking references", referenced, unit="ids")
        await check_references(self.conn, self.catalogue, self.problems)
        check_sealed(self.catalogue, self.context.secret_box, self.problems)
        self.progress.advance(referenced)
        self.problems.raise_if_any()

    async def write(self) -> None:
        """Pass 3: upserts chunk by chunk (but the rows a bulk load has written already).

        A large load that cannot be a bulk one (the table holds addendums) still
        rebuilds the counters once instead of counting row by row.
        """
        conn, counts = self.conn, self.catalogue.counts
        written = self.bulk.table if self.bulk is not None else None
        rebuild = written is None and bulk_counts.deferrable(conn, counts.get("addendums", 0))
        if rebuild:
            await bulk_counts.defer_counting(conn)
        self.progress.phase("writing", record_count(self.document))
        for kind in KINDS:
            if kind.table is written:
                self.progress.advance(counts.get(kind.key, 0))
                continue
            for _start, chunk in chunks(records_of(self.document, kind)):
                records = kind.adapter.validate_python(chunk)
                rows = [kind.to_row(rec, self.context) for rec in records]
                await upsert_rows(conn, kind.table, rows)
                if kind.key == "users":
                    await replace_memberships(conn, {rec.id: rec.group_ids() for rec in records})
                self.progress.advance(len(chunk))
        if rebuild:
            await bulk_counts.rebuild_counts(conn)
        await continue_sequences(conn, [kind.table for kind in KINDS if counts.get(kind.key)])


def _in_order(row: Row, columns: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row[column] for column in columns)
