"""A faster parse of a load document that holds no JSON float.

``json.loads`` took 3 of the 10 CPU-seconds of a 200,000-addendum load;
``pydantic_core.from_json`` (already installed with pydantic) parses the same
UTF-8 bytes in well under half the time. It differs from ``json.loads`` in two
ways that matter here, and this module only ever uses it where neither can show:

- it reads a JSON float as a binary ``float``; the loader wants ``Decimal``
  (prices must stay exact). So a document that may hold a float (a digit followed
  by ``.``, ``e`` or ``E`` anywhere, strings included) is not parsed here;
- it rejects some text ``json.loads`` accepts (a lone surrogate escape, very deep
  nesting) and words its errors its own way. So anything it rejects is not
  parsed here either.

In both cases ``parse_bytes`` answers ``NOT_PARSED`` and the caller parses the
text with ``json.loads`` as before: results and error messages stay those of
``json.loads``. ``tests/importer/test_fast_json.py`` holds the two parsers to
the same result.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic_core import from_json

NOT_PARSED: Final = object()

# Every digit becomes "0" and every character that can follow the digits of a
# float's integer part becomes ".": a float, wherever it is, shows as "0.".
_FLOAT_MARKS = bytes.maketrans(b"123456789eE", b"000000000..")
# Translated a slice at a time: a copy of a whole document would double its memory. A
# slice that stays in the CPU's cache while it is translated and searched: over the 395 MB
# of a million addendums 0.68-0.75 s with 64 KiB slices, 1.10-1.13 s with 4 MiB ones.
_SLICE = 1 << 16


def parse_bytes(data: bytes) -> Any:
    """The JSON value of the UTF-8 ``data``, exactly as ``json.loads(data.decode(),
    parse_float=Decimal)`` gives it, or ``NOT_PARSED`` when the caller must ask
    ``json.loads`` (a float may be in it, or the fast parser rejects it)."""
    if _may_hold_float(data):
        return NOT_PARSED
    try:
        return from_json(data)
    except ValueError:
        return NOT_PARSED


def _may_hold_float(data: bytes) -> bool:
    for start in range(0, len(data), _SLICE):
        # One byte of overlap: a digit at the end of a slice meets its successor.
        if b"0." in data[start : start + _SLICE + 1].translate(_FLOAT_MARKS):
            return True
    return False
