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

from cloudadmin.importer.kinds import BY_KEY, KINDS, Kind
from cloudadmin.importer.problems import Problems, from_validation_error, pointer
from cloudadmin.importer.records import ClientRecord
from cloudadmin.importer.rows import AccountInfo

CHUNK = 5_000


@dataclass
class Catalogue:
    # key -> record id -> index of the record in the document's list
    ids: dict[str, dict[Any, int]] = field(default_factory=dict)
    accounts: dict[int, AccountInfo] = field(default_factory=dict)
    # (target key, reseller only) -> referenced id -> pointer of its first mention
    refs: dict[tuple[str, bool], dict[Any, str]] = field(default_factory=dict)
    # (key, unique field) -> normalized value -> (record id, pointer of the value)
    unique: dict[tuple[str, str], dict[Any, tuple[Any, str]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def records_of(document: dict[str, Any], kind: Kind) -> list[Any]:
    return document.get(kind.key) or []


def chunks(items: list[Any], size: int = CHUNK) -> Iterator[tuple[int, list[Any]]]:
    for start in range(0, len(items), size):
        yield start, items[start : start + size]


def survey(document: Any, problems: Problems) -> Catalogue:
    """Validates the whole document into ``problems``; returns what the checks need."""
    catalogue = Catalogue()
    if not isinstance(document, dict):
        problems.add("", "the document must be a JSON object")
        return catalogue
    for key, value in document.items():
        if key not in BY_KEY:
            problems.add(pointer(key), "unknown key")
        elif value is not None and not isinstance(value, list):
            problems.add(pointer(key), "must be an array")
    if problems:
        return catalogue
    for kind in KINDS:
        items = records_of(document, kind)
        catalogue.counts[kind.key] = len(items)
        seen = catalogue.ids.setdefault(kind.key, {})
        for start, chunk in chunks(items):
            try:
                models = kind.adapter.validate_python(chunk)
            except ValidationError as exc:
                for problem in from_validation_error((kind.key,), exc):
                    # Locations inside the chunk start at 0; shift them to the list.
                    problems.add(_shift(problem.pointer, kind.key, start), problem.message)
                continue
            for offset, model in enumerate(models):
                _note(catalogue, kind, start + offset, model, seen, problems)
    return catalogue


def _shift(ptr: str, key: str, start: int) -> str:
    head = f"/{key}/"
    index, sep, rest = ptr[len(head) :].partition("/")
    return f"{head}{int(index) + start}{sep}{rest}"


def _note(
    catalogue: Catalogue,
    kind: Kind,
    index: int,
    model: Any,
    seen: dict[Any, int],
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
            by_id.setdefault(target_id, pointer(kind.key, index, ref.field))
    if isinstance(model, ClientRecord):
        catalogue.accounts[model.id] = AccountInfo(model.client_type, model.companyName)
    for rule in kind.unique:
        taken = catalogue.unique.setdefault((kind.key, rule.field), {})
        value = rule.normalize(getattr(model, rule.field))
        ptr = pointer(kind.key, index, rule.field)
        if value in taken:
            problems.add(ptr, f"already used by {taken[value][1]}")
        else:
            taken[value] = (ident, ptr)
