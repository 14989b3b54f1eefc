"""fast_json.parse_bytes gives what json.loads gives, or leaves the text to it."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from cloudadmin.importer import fast_json
from tests.importer.documents import example

# Texts json.loads and pydantic_core read differently or only one of them accepts.
EDGES = [
    '{"a": 1, "a": 2}',
    "[NaN, Infinity, -Infinity]",
    '"\x01"',
    '"\\ud800"',
    "\ufeff[1]",
    "[1,]",
    '{"a": 1,}',
    "123456789012345678901234567890",
    "[-0]",
    "[01]",
    "[1] x",
    " \t\n[1]\r\n ",
    "\x0c[1]",
    '"\t"',
    "[1.5]",
    "[1.10]",
    "[1e5]",
    "[2E-3]",
    '{"price": 0.1000000000000000055511151231257827}',
    '{"name": "VPS 2.0"}',
    '{"\\u0000": 1}',
    '"\\u00e9 \u00e9 \\/"',
    "[true, false, null]",
    "null",
    "nan",
    "[+1]",
    '{"a" 1}',
    "'a'",
    "[1]\x00",
    "[" * 300 + "]" * 300,
    "",
]


def loads(text: str) -> tuple[str, Any]:
    try:
        return "value", json.loads(text, parse_float=Decimal)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


@pytest.mark.parametrize("text", EDGES)
def test_the_fast_parse_agrees_with_json_loads_or_declines(text: str) -> None:
    fast = fast_json.parse_bytes(text.encode("utf-8", "surrogatepass"))
    if fast is not fast_json.NOT_PARSED:
        # repr: NaN is not equal to itself, and 1 == 1.0 == Decimal(1).
        assert repr(("value", fast)) == repr(loads(text))


def test_a_float_anywhere_is_left_to_json_loads() -> None:
    for text in ("[1.5]", "[1e5]", "[2E-3]", '{"name": "VPS 2.0"}', "[" + " " * (1 << 22) + "1.5]"):
        assert fast_json.parse_bytes(text.encode()) is fast_json.NOT_PARSED


def test_invalid_utf8_is_left_to_json_loads() -> None:
    assert fast_json.parse_bytes(b'"\xff"') is fast_json.NOT_PARSED


def test_a_load_document_without_floats_is_parsed_fast() -> None:
    text = json.dumps(example())
    assert fast_json.parse_bytes(text.encode()) == json.loads(text, parse_float=Decimal)


@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_a_float_across_the_slices_border_is_seen(offset: int) -> None:
    """The float check reads the document a slice at a time: a float whose last digit
    ends one slice and whose "." or "e" starts the next (offset 0) is seen all the same."""
    text = "x" * (fast_json._SLICE + offset - len('{"a": "", "b": 1'))
    head = ('{"a": "' + text + '", "b": 1').encode()
    assert len(head) == fast_json._SLICE + offset  # its last byte: the digit 1
    for mark in (b".5", b"e5", b"E5"):
        assert fast_json.parse_bytes(head + mark + b"}") is fast_json.NOT_PARSED
    assert fast_json.parse_bytes(head + b"}") == {"a": text, "b": 1}
