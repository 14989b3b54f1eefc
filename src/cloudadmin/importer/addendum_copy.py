"""Addendums straight to COPY tuples, for a bulk load (importer/bulk.py).

pydantic's validation of an ``AddendumRecord`` (five nested models, three
model-level checks and three instants parsed by a Python validator) cost about
30 µs of CPU per addendum, the largest part of a million-addendum load. An
addendum has a fixed, flat shape, so this module checks a chunk with msgspec and
plain Python and builds its COPY rows in the same step.

It only ever *accepts*: a chunk with anything it is not sure of (one invalid
record, an unusual but valid spelling) gets None, and the caller validates that
chunk with pydantic as before. So every problem, its message and its order
still come from the models (records.AddendumRecord), and this module must
accept nothing those models reject. ``tests/importer/test_addendum_copy.py``
holds it to the models on valid and invalid records.

A chunk that pydantic then finds valid is a *fallback*, as db/driver.py's replays
are: a slowdown nobody would otherwise see, counted (:func:`fallback_count`) and
logged as a warning, and the importer's tests fail on one they did not expect
(tests/driver_guard.py). Only the refusals this module means (``_REFUSALS``)
lead to pydantic; any other exception is a bug here and propagates as it is.

The shape is the field table's (billing/addendums/fields.py): ``AddendumJson``, a
msgspec struct of its fields, and the COPY tuple's columns are generated from it. A
document parsed by importer/fast_json.py may hold its addendums as ``AddendumJson``
structs already: msgspec checked their keys, JSON types, integer bounds and text
lengths while it decoded them (as the models would, or more strictly). Addendums given
as dicts are converted to the structs by msgspec (with the same checks), and their
text written once to UTF-8 (a lone surrogate, which the models refuse, fails there).
Only what msgspec cannot say is checked here (instants, the known currencies and
products, ``client.id``).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from operator import attrgetter
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType
from pydantic_core import PydanticCustomError

from cloudadmin.billing.addendums import fields, shaping
from cloudadmin.billing.addendums.fields import AddendumField
from cloudadmin.billing.catalogue import CURRENCIES, PRODUCTS
from cloudadmin.db.models.billing import FOLDED_COLUMNS
from cloudadmin.importer.fields import _instant
from cloudadmin.importer.records import AddendumStatus
from cloudadmin.kit.caseless import fold

log = logging.getLogger(__name__)

# The columns of a COPY tuple, in order (the row rows.addendum_row builds).
COLUMNS = fields.STORED_COLUMNS + tuple(FOLDED_COLUMNS)

# The spelling export writes: datetime.fromisoformat reads it as _instant does
# (same instant, tzinfo UTC) at a third of the cost; any other goes through _instant.
_PLAIN_UTC_TEXT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"
_PLAIN_UTC = re.compile(_PLAIN_UTC_TEXT).fullmatch
# A chunk's instants of one field, all of that spelling, are read by msgspec in one call
# (_instants): the texts, each 20 characters long, joined match this.
_PLAIN_UTC_RUN = re.compile(f"(?:{_PLAIN_UTC_TEXT})*").fullmatch
_PLAIN_LENGTH = {20}
_DATETIMES = list[datetime]


def _json_type(field: AddendumField) -> Any:
    """A field's type for msgspec: records.AddendumRecord's bounds, instants as text
    (_instant_of reads them), the texts checked against a catalogue as plain text."""
    if field.origin in (fields.JOINED, fields.COMPUTED):
        return str | None | UnsetType
    if field.kind in ("number", "nullable number"):
        low, high = field.bounds or (None, None)
        typed: Any = Annotated[int, Meta(ge=low, le=high)] if field.bounds else int
    elif field.kind == "status":
        typed = AddendumStatus
    elif field.max_length is not None:
        typed = Annotated[str, Meta(max_length=field.max_length)]
    else:
        typed = str
    return typed | None | UnsetType if fields.optional(field) else typed


def _struct(name: str, members: fields.Layout) -> Any:
    """Unknown keys are refused, as the models refuse them; a key that may be left out
    defaults to UNSET, so that fast_json.plain gives back the object as it was. gc=False:
    these hold only numbers, strings and each other, never a cycle, and a million of them
    would otherwise be in the cyclic collector's way."""
    declared: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for key, node in members:
        if isinstance(node, AddendumField):
            typed = _json_type(node)
        else:
            typed = _struct(fields.GROUPS[key], node)
            typed = typed | None | UnsetType if fields.optional(node) else typed
        declared.append((key, typed, UNSET) if fields.optional(node) else (key, typed))
    return msgspec.defstruct(
        name, declared, forbid_unknown_fields=True, kw_only=True, gc=False, module=__name__
    )


# An addendum's plain shape (records.AddendumRecord and its parts), for msgspec.
AddendumJson = _struct("AddendumJson", fields.layout(fields.FIELDS))
_RECORDS = list[AddendumJson]  # type: ignore[valid-type]


class _Unsure(Exception):
    """Not plainly valid: pydantic decides."""


# What the checks raise on a value they do not take: their own doubt, what msgspec does
# not take, an instant fields._instant refuses, a text with a lone surrogate.
_REFUSALS = (_Unsure, msgspec.ValidationError, PydanticCustomError, UnicodeEncodeError)

_fallbacks = 0


def fallback_count() -> int:
    """How many chunks this process left to pydantic that pydantic found valid."""
    return _fallbacks


def note_fallback(start: int, size: int) -> None:
    """Counts a chunk that the plain check refused and pydantic took whole (the
    importer calls it: only pydantic knows)."""
    global _fallbacks
    _fallbacks += 1
    log.warning(
        "addendums %d to %d were valid but not plainly so: validated by pydantic",
        start,
        start + size - 1,
    )


def _instant_of(value: Any) -> datetime:
    if type(value) is str and _PLAIN_UTC(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:  # a day or an hour out of range: the models say which
            raise _Unsure from None
    result: datetime = _instant(value)  # raises on anything the model rejects
    return result


def _folded(known: dict[str, str], name: str) -> str:
    # A few hundred plan and product names in a million rows: each folded once.
    found = known[name] = fold(name)
    return found


# The instant fields: their values are read chunk by chunk (_instants) and handed to
# _columns as ``instants``, in this order.
_INSTANT_FIELDS = [f for f in fields.STORED_FIELDS if f.kind in ("instant", "nullable instant")]
_INSTANT_PATHS = [attrgetter(f.path) for f in _INSTANT_FIELDS]


def _value(field: AddendumField) -> str:
    """The expression of ``field``'s column in the COPY tuple, over the struct ``rec``."""
    if field in _INSTANT_FIELDS:
        return f"instants[{_INSTANT_FIELDS.index(field)}]"
    value = f"rec.{field.path}"
    if fields.optional(field):
        return f"(None if (v := {value}) is UNSET else v)"
    return value


def _columns_function() -> Any:
    path_of = {f.column: f.path for f in fields.STORED_FIELDS}
    values = [_value(f) for f in fields.STORED_FIELDS]
    for source in FOLDED_COLUMNS.values():  # the dict's answer, else a call that folds
        name = f"rec.{path_of[source]}"
        values.append(f"(folded.get({name}) or _folded(folded, {name}))")
    names = {"UNSET": UNSET, "_folded": _folded}
    return shaping.build(
        "columns", f"({', '.join(values)},)", params="rec, folded, instants", names=names
    )


_columns = _columns_function()


def _instants(values: list[Any]) -> list[datetime | None]:
    """One instant field's values in a chunk, read: a key left out (UNSET) or null is
    None.

    When every text is spelled as an export writes it (``_PLAIN_UTC``), msgspec reads
    them all in one call, in C, as ``datetime.fromisoformat`` would (the same instant,
    tzinfo UTC; tests/importer/test_addendum_copy.py holds it to that): 0.5 µs an
    instant less than one call each. A date or time out of range makes msgspec raise
    (the chunk goes to pydantic, which says where). Other spellings are read one by one.
    """
    texts = [v for v in values if v is not None and v is not UNSET]
    if set(map(len, texts)) <= _PLAIN_LENGTH and _PLAIN_UTC_RUN("".join(texts)):
        read: list[datetime] = msgspec.convert(texts, _DATETIMES)
    else:
        read = list(map(_instant_of, texts))
    if len(texts) == len(values):
        return list(read)
    them = iter(read)
    return [None if v is None or v is UNSET else next(them) for v in values]


def _structs(chunk: list[Any]) -> list[Any]:
    """Addendums given as dicts (json.loads'), as the structs msgspec would have parsed."""
    records: list[Any] = msgspec.convert(chunk, _RECORDS)
    msgspec.json.encode(records)  # a lone surrogate in a text raises UnicodeEncodeError
    return records


def copy_tuples(chunk: list[Any]) -> list[tuple[Any, ...]] | None:
    """The COPY tuples (``COLUMNS``) of ``chunk``'s addendums when every one is plainly
    valid; None when pydantic must look at the chunk."""
    folded: dict[str, str] = {}
    out: list[tuple[Any, ...]] = []
    append = out.append
    try:
        typed = chunk if chunk and type(chunk[0]) is AddendumJson else _structs(chunk)
        instants = zip(*[_instants(list(map(path, typed))) for path in _INSTANT_PATHS], strict=True)
        for rec, at in zip(typed, instants, strict=True):
            # msgspec checked the shape (AddendumJson); what is left are the records'
            # checks, written out in the loop (the hot one of a bulk load) as before.
            currency, product, client = rec.currency, rec.product, rec.client
            if CURRENCIES.get(currency.id) != currency.char_code:
                raise _Unsure
            if PRODUCTS.get(product.id) != product.internal_name:
                raise _Unsure
            if client is not UNSET and client is not None and client.id != rec.client_id:
                raise _Unsure
            append(_columns(rec, folded, at))
    except _REFUSALS:
        return None
    return out
