"""fast_json.parse_bytes gives what json.loads gives (its addendums as structs that
turn back into the same dicts), or leaves the text to it."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from cloudadmin.importer import addendum_copy, fast_json
from tests.importer.documents import addendum, example

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


def test_floats_are_exact_decimals() -> None:
    for text in ("[1.5]", "[1e5]", "[2E-3]", '{"price": 0.10}', "[1E400, -0.0]"):
        assert repr(fast_json.parse_bytes(text.encode())) == repr(
            json.loads(text, parse_float=Decimal)
        )


def test_invalid_utf8_is_left_to_json_loads() -> None:
    assert fast_json.parse_bytes(b'"\xff"') is fast_json.NOT_PARSED


def test_a_load_document_is_parsed_fast() -> None:
    text = json.dumps({**example(), "addendums": [addendum(1), addendum(2)]})
    assert isinstance(fast_json.parse_bytes(text.encode()), dict)


# Addendums in every spelling the models accept: absent and null optional keys, a
# client with and without its name, an open and a closed range.
ADDENDUMS = [
    addendum(1),
    addendum(2, client={"id": 2001}, payer_id=None, provider_id=7, reseller_id=0),
    addendum(3, client={"id": 2001, "company_name": None}, status_at_active_at=None),
    addendum(4, client=None, active_range={"start": "2025-01-01T00:00:00Z", "end": None}),
    addendum(5, active_range={"start": "2025-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}),
    addendum(6, plan={"id": 1, "name": "Größe \u2603 😀"}, status_at_active_at="x"),
]


def parsed(records: list[Any], **document: Any) -> Any:
    return fast_json.parse_bytes(json.dumps({**document, "addendums": records}).encode())


class TestTypedAddendums:
    def test_plainly_shaped_addendums_come_back_as_structs(self) -> None:
        document = parsed(ADDENDUMS)
        assert all(isinstance(a, addendum_copy.AddendumJson) for a in document["addendums"])

    def test_plain_gives_back_what_json_loads_gives(self) -> None:
        """Key for key: a key left out stays out, a null stays a null."""
        text = json.dumps({**example(), "addendums": ADDENDUMS})
        document = fast_json.parse_bytes(text.encode())
        expected = json.loads(text, parse_float=Decimal)
        assert document.keys() == expected.keys()
        assert fast_json.plain(document["addendums"]) == expected["addendums"]
        fast_json.settle(document)
        assert document == expected

    def test_the_rest_of_the_document_is_plain_values(self) -> None:
        document = parsed([], clients=[{"id": 1, "price": 0.10}], projects=None)
        assert document == {"clients": [{"id": 1, "price": Decimal("0.10")}],
                            "projects": None, "addendums": []}  # fmt: skip

    @pytest.mark.parametrize(
        "fields",
        [{"id": True}, {"id": 1.0}, {"id": 2**63}, {"status": "lost"}, {"surprise": 1},
         {"plan": {"id": 1, "name": "x" * 256}}, {"client": {"company_name": "x"}},
         {"currency": {"id": 1, "char_code": "USD", "symbol": "US$$$$"}},
         {"active_range": {"start": 1}}, {"created_at": None}],
        ids=repr,
    )  # fmt: skip
    def test_any_other_shape_gives_plain_values(self, fields: dict[str, Any]) -> None:
        """One addendum msgspec cannot take: the whole document is parsed untyped, and
        the models judge that addendum."""
        records = [addendum(1), addendum(2, **fields)]
        text = json.dumps({"addendums": records})
        assert fast_json.parse_bytes(text.encode()) == json.loads(text)

    def test_text_lengths_count_characters(self) -> None:
        """max_length 5 and 255 as the models count them: characters, not bytes."""
        symbol = {"id": 1, "char_code": "USD", "symbol": "€€€€😀"}
        name = {"id": 1, "name": "ß" * 255}
        document = parsed([addendum(1, currency=symbol, plan=name)])
        assert isinstance(document["addendums"][0], addendum_copy.AddendumJson)

    def test_a_lone_surrogate_is_never_a_struct(self) -> None:
        """The plain check of a struct does not look for lone surrogates (the models
        refuse them): msgspec must refuse to decode them."""
        text = json.dumps({"addendums": [addendum(1, plan={"id": 1, "name": "x\ud800"})]})
        assert fast_json.parse_bytes(text.encode()) is fast_json.NOT_PARSED

    def test_a_duplicate_key_keeps_the_last_value_as_json_loads_does(self) -> None:
        text = json.dumps({"addendums": [addendum(1)]})
        text = text.replace('"id": 1,', '"id": 9, "id": 1,', 1)
        document = fast_json.parse_bytes(text.encode())
        assert fast_json.plain(document["addendums"]) == json.loads(text)["addendums"]
