"""First pass over a document: validate every record and note what it needs.

Nothing is kept of the records themselves, only ids, references and the few
values the database constrains, so a document with a million addendums does not
hold a million models in memory. The write pass validates each chunk again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from cloudadmin.importer.document_parts import StreamedRecords
from cloudadmin.importer.id_index import IdIndex
from cloudadmin.importer.kinds import BY_KEY, KINDS, Kind
from cloudadmin.importer.problems import Problems, from_validation_error, pointer
from cloudadmin.importer.progress import PhaseProgress
from cloudadmin.importer.records import ClientRecord
from cloudadmin.importer.rows import AccountInfo

CHUNK = 5_000


@dataclass
class Catalogue:
    # key -> record id -> index of the record in the document's list
    ids: dict[str, IdIndex] = field(default_factory=dict)
    accounts: dict[int, AccountInfo] = field(default_factory=dict)
    # (target key, reseller only) -> referenced id -> pointer of its first mention
    refs: dict[tuple[str, bool], dict[Any, str]] = field(default_factory=dict)
    # (key, unique field) -> normalized value -> (record id, pointer of the value)
    unique: dict[tuple[str, str], dict[Any, tuple[Any, str]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    complete: bool = False
    # Encrypted values given in their stored form: (pointer, token), checked with the key.
    sealed: list[tuple[str, str]] = field(default_factory=list)


def records_of(document: dict[str, Any], kind: Kind) -> list[Any]:
    """The records of ``kind`` as parsed: dicts, but a bulk load's addendums may be
    structs (importer/fast_json.py; ``fast_json.settle`` turns them into dicts), or
    still in the file, read as they are needed (``StreamedRecords``, only for a bulk
    load)."""
    return document.get(kind.key) or []


def record_count(document: Any) -> int | None:
    """Records in the document's lists (None when it is not an object); records still
    in the file are not counted."""
    if not isinstance(document, dict):
        return None
    return sum(len(value) for value in document.values() if isinstance(value, list))


def chunks(
    items: list[Any] | StreamedRecords, size: int = CHUNK
) -> Iterator[tuple[int, list[Any]]]:
    """``items`` ``size`` at a time, each with the index of its first."""
    if isinstance(items, StreamedRecords):
        yield from items.chunks(size)
        return
    for start in range(0, len(items), size):
        yield start, items[start : start + size]


def survey(document: Any, problems: Problems, progress: PhaseProgress | None = None) -> Catalogue:
    """Validates the whole document into ``problems``; returns what the checks need.

    ``catalogue.complete`` is False when the document's shape is wrong (not an
    object, an unknown or non-list top-level key): then nothing else is checked.
    """
    catalogue = open_catalogue(document, problems)
    if not catalogue.complete:
        return catalogue
    for kind in KINDS:
        for start, chunk in chunks(records_of(document, kind)):
            survey_chunk(catalogue, kind, start, chunk, problems)
            if progress is not None:
                progress.advance(len(chunk))
    return catalogue


def open_catalogue(document: Any, problems: Problems) -> Catalogue:
    """The shape checks of ``document``; an empty catalogue to fill chunk by chunk,
    ``complete`` when the shape is right."""
    catalogue = Catalogue()
    if not isinstance(document, dict):
        problems.add("", "the document must be a JSON object")
        return catalogue
    check_keys(document, problems)
    if problems:
        return catalogue
    catalogue.complete = True
    for kind in KINDS:
        records = records_of(document, kind)
        catalogue.counts[kind.key] = (
            records.count if isinstance(records, StreamedRecords) else len(records)
        )
    return catalogue


def check_keys(document: dict[str, Any], problems: Problems) -> None:
    """A problem at each top-level key that is unknown or not an array."""
    for key, value in document.items():
        if key not in BY_KEY:
            problems.add(pointer(key), "unknown key")
        elif value is not None and not isinstance(value, list | StreamedRecords):
            problems.add(pointer(key), "must be an array")


def survey_chunk(
    catalogue: Catalogue, kind: Kind, start: int, chunk: list[Any], problems: Problems
) -> list[Any]:
    """Validates the records ``start`` .. of ``kind`` into ``problems`` and notes them;
    returns the chunk's valid records (all of them when it adds no problem)."""
    seen = catalogue.ids.setdefault(kind.key, IdIndex())
    valid, bad = _valid_records(kind, start, chunk, problems)
    for offset, model in valid:
        _note(catalogue, kind, start + offset, model, seen, problems)
    for offset in bad:
        _note_identity(kind, start + offset, chunk[offset], seen)
    return [model for _offset, model in valid]


def note_copied(
    catalogue: Catalogue,
    kind: Kind,
    start: int,
    columns: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    problems: Problems,
) -> None:
    """Notes the rows ``start`` .. of ``kind`` checked outside pydantic (COPY tuples of
    ``columns``, importer/addendum_copy.py) as _note notes valid records: ids,
    duplicates and references. Only for a kind whose key and reference fields are
    columns of the same name, without unique or sealed values."""
    assert not kind.unique and not kind.sealed and kind.model is not ClientRecord
    seen = catalogue.ids.setdefault(kind.key, IdIndex())
    key_at = columns.index(kind.identity)
    idents = [row[key_at] for row in rows]
    # Ids rising one by one (an export's) are noted as a run, with no look per row.
    duplicates: set[int] = set()
    if not seen.extend(idents, start):
        for index, ident in enumerate(idents, start):
            if ident in seen:
                first = pointer(kind.key, seen[ident])
                problems.add(pointer(kind.key, index, kind.identity), f"duplicate of {first}")
                duplicates.add(index)
            else:
                seen[ident] = index
    for ref in kind.refs:
        at = columns.index(ref.field)
        by_id = catalogue.refs.setdefault((ref.target, ref.reseller_only), {})
        # A few thousand clients in a million rows: most chunks name none that is new.
        named = {row[at] for row in rows}
        if not any(target_id not in by_id for target_id in named if target_id is not None):
            continue
        for index, row in enumerate(rows, start):
            target_id = row[at]
            if target_id is not None and target_id not in by_id and index not in duplicates:
                by_id[target_id] = pointer(kind.key, index, ref.field)


def _valid_records(
    kind: Kind, start: int, chunk: list[Any], problems: Problems
) -> tuple[list[tuple[int, Any]], list[int]]:
    """The chunk's valid records with their offsets, and the offsets of the others
    (whose problems are added).

    The valid records of a chunk that holds a bad one are still noted, so that their
    references are checked in the same run: an operator fixing a document sees
    every problem at once, not the reference errors only after the field errors.
    """
    try:
        return list(enumerate(kind.adapter.validate_python(chunk))), []
    except ValidationError as exc:
        bad: set[int] = set()
        for err in exc.errors(include_url=False):
            if err["loc"] and isinstance(err["loc"][0], int):
                bad.add(err["loc"][0])
        for problem in from_validation_error((kind.key,), exc):
            # Locations inside the chunk start at 0; shift them to the list.
            problems.add(_shift(problem.pointer, kind.key, start), problem.message)
    good = [offset for offset in range(len(chunk)) if offset not in bad]
    models = kind.adapter.validate_python([chunk[offset] for offset in good]) if good else []
    return list(zip(good, models, strict=True)), sorted(bad)


def _note_identity(kind: Kind, index: int, raw: Any, seen: IdIndex) -> None:
    """A record with a field error still defines its id, if that looks like one, so
    references to it do not add a misleading "no client with id ..." problem."""
    ident = raw.get(kind.identity) if isinstance(raw, dict) else None
    if isinstance(ident, int | str) and not isinstance(ident, bool):
        seen.setdefault(ident, index)


def _shift(ptr: str, key: str, start: int) -> str:
    head = f"/{key}/"
    index, sep, rest = ptr[len(head) :].partition("/")
    return f"{head}{int(index) + start}{sep}{rest}"


def _note(
    catalogue: Catalogue,
    kind: Kind,
    index: int,
    model: Any,
    seen: IdIndex,
    problems: Problems,
) -> None:
    ident = getattr(model, kind.identity)
    if ident in seen:
        first = pointer(kind.key, seen[ident])
        problems.add(pointer(kind.key, index, kind.identity), f"duplicate of {first}")
        return
    seen[ident] = index
    for ref in kind.refs:
        target_id = getattr(model, ref.field)
        if target_id is not None:
            by_id = catalogue.refs.setdefault((ref.target, ref.reseller_only), {})
            # Only the first mention's pointer is kept: a million addendums of a few
            # thousand clients build a few thousand pointers, not a million.
            if target_id not in by_id:
                by_id[target_id] = pointer(kind.key, index, ref.field)
    if isinstance(model, ClientRecord):
        catalogue.accounts[model.id] = AccountInfo(model.client_type, model.companyName)
    for name in kind.sealed:
        token = getattr(model, name)
        if token is not None:
            catalogue.sealed.append((pointer(kind.key, index, name), token))
    for rule in kind.unique:
        if not rule.counts(model):
            continue
        taken = catalogue.unique.setdefault((kind.key, rule.field), {})
        value = rule.normalize(getattr(model, rule.field))
        ptr = pointer(kind.key, index, rule.field)
        if value in taken:
            problems.add(ptr, f"already used by {taken[value][1]}")
        else:
            taken[value] = (ident, ptr)
