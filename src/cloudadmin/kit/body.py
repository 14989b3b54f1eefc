"""The base of request bodies, and the nesting of a JSON body read without parsing it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate

from pydantic import BaseModel, ConfigDict


class LenientBody(BaseModel):
    """A request body that ignores the fields it does not know: the read-only fields of a
    resource sent back with it, and fields of the real API this service does not keep."""

    model_config = ConfigDict(extra="ignore")


# ---- nesting of a JSON body -------------------------------------------------------

# A JSON string (its brackets are text, not structure): possessive, and its closing
# quote optional, so that no byte is read twice however the body ends.
_STRINGS = re.compile(rb'("[^"\\]*+(?:\\.[^"\\]*+)*+"?)', re.S)
_BLANK = bytes(range(256)).maketrans(bytes(range(256)), b" " * 256)
_STEPS = [0] * 256
_STEPS[ord("[")] = _STEPS[ord("{")] = 1
_STEPS[ord("]")] = _STEPS[ord("}")] = -1


def _levels(raw: bytes) -> Iterator[int]:
    """The nesting level after each byte of a JSON text: its strings blanked out, then
    its brackets counted. C loops (split, translate, accumulate), not a Python loop per
    byte or token: a megabyte of brackets is read in well under a tenth of a second."""
    pieces = _STRINGS.split(raw)
    pieces[1::2] = [piece.translate(_BLANK) for piece in pieces[1::2]]
    return accumulate(map(_STEPS.__getitem__, b"".join(pieces)))


def _few_brackets(raw: bytes, depth: int) -> bool:
    return raw.count(b"[") + raw.count(b"{") <= depth


def nested_deeper_than(raw: bytes, depth: int) -> bool:
    """Whether the arrays and objects of a JSON text nest deeper than ``depth``
    (``[[1]]`` nests 2 deep), read without parsing it. Linear in the body and without
    recursion, so it can be asked before a recursive parser sees the body; for a text
    that is not JSON the answer means nothing (the parser refuses it anyway)."""
    if _few_brackets(raw, depth):  # most bodies: no need to look closer
        return False
    return max(_levels(raw), default=0) > depth


def flattened(raw: bytes, depth: int, placeholder: bytes) -> bytes:
    """The JSON text ``raw`` with every array or object nested deeper than ``depth``
    replaced by ``placeholder`` (a JSON value): a text any parser reads without deep
    recursion. Linear, iterative."""
    if _few_brackets(raw, depth):
        return raw
    levels = list(_levels(raw))
    out: list[bytes] = []
    done = 0
    while True:
        try:
            deeper = levels.index(depth + 1, done)  # the bracket that opens too deep
        except ValueError:
            break
        out += [raw[done:deeper], placeholder]
        try:
            done = levels.index(depth, deeper) + 1  # just after the bracket closing it
        except ValueError:  # never closed: not JSON
            done = len(raw)
            break
    out.append(raw[done:])
    return b"".join(out)
