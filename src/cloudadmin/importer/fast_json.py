"""A faster parse of a load document, with the result ``json.loads`` gives.

``json.loads(text, parse_float=Decimal)`` (prices must stay exact) took about 5.5 s of
a million-addendum load, and checking the addendums it gave, dict by dict, about 7 s
more. msgspec's C decoder reads the same UTF-8 bytes in two ways:

1. typed: when every addendum has the plain shape ``addendum_copy.AddendumJson``
   describes (exact keys, JSON types, integer bounds, text lengths), the addendums come
   back as those structs, checked while they were decoded; the rest of the document as
   plain values. 2.3-2.6 s for the million. ``plain()`` turns structs back into the
   very dicts ``json.loads`` gives (a key left out stays out).
2. untyped: any other document, as plain values, with ``float_hook=Decimal``
   (``json.loads``' own ``parse_float``).

msgspec rejects some text ``json.loads`` accepts (``NaN``, a lone surrogate escape, very
deep nesting) and words its errors its own way: then ``parse_bytes`` answers
``NOT_PARSED`` and the caller parses the text with ``json.loads``, so results and error
messages stay those of ``json.loads``. ``tests/importer/test_fast_json.py`` holds the
parsers to the same result.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from typing import Any, Final

import msgspec

from cloudadmin.importer.addendum_copy import AddendumJson

NOT_PARSED: Final = object()
UNTYPED = msgspec.json.Decoder(float_hook=Decimal)
# The key whose records may come back as structs.
TYPED_KEY: Final = "addendums"
# msgspec's decode and validation errors; invalid UTF-8 (UnicodeDecodeError); nesting
# deeper than the interpreter's recursion limit.
REJECTED = (msgspec.MsgspecError, ValueError, RecursionError)


@cache
def _typed() -> msgspec.json.Decoder[Any]:
    # The document's keys from the kinds (imported late: kinds imports the models).
    from cloudadmin.importer.kinds import KINDS

    fields = [
        (kind.key, (list[AddendumJson] if kind.key == TYPED_KEY else list[Any]) | None
         | msgspec.UnsetType, msgspec.UNSET)
        for kind in KINDS
    ]  # fmt: skip
    document = msgspec.defstruct("Document", fields, forbid_unknown_fields=True)
    return msgspec.json.Decoder(document, float_hook=Decimal)


def parse_bytes(data: bytes) -> Any:
    """The JSON value of the UTF-8 ``data``, exactly as ``json.loads(data.decode(),
    parse_float=Decimal)`` gives it but with plainly shaped addendums as structs (see
    ``plain``), or ``NOT_PARSED`` when the caller must ask ``json.loads``."""
    try:
        document = _typed().decode(data)
    except REJECTED:
        pass
    else:
        return {
            name: value
            for name in document.__struct_fields__
            if (value := getattr(document, name)) is not msgspec.UNSET
        }
    try:
        return UNTYPED.decode(data)
    except REJECTED:
        return NOT_PARSED


def plain(records: list[Any]) -> list[Any]:
    """``records`` as ``json.loads`` gives them: structs become dicts."""
    if records and isinstance(records[0], msgspec.Struct):
        result: list[Any] = msgspec.to_builtins(records)
        return result
    return records


def settle(document: Any) -> None:
    """Turns the structs of a parsed document into dicts, in place: for a load that
    validates its addendums with the models."""
    if isinstance(document, dict) and isinstance(document.get(TYPED_KEY), list):
        document[TYPED_KEY] = plain(document[TYPED_KEY])
