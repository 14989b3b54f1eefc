"""The plain check of a bulk load's addendums (importer/addendum_copy.py) accepts only
what the models accept, and builds the rows the models' path builds: for addendums as
dicts, and as the structs importer/fast_json.py parses plainly shaped ones into."""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from cloudadmin.importer import addendum_copy, fast_json
from cloudadmin.importer.fields import _instant
from cloudadmin.importer.kinds import BY_KEY
from cloudadmin.importer.rows import RowContext
from cloudadmin.kit.crypto import SecretBox
from tests.importer.documents import addendum

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_addendums  # noqa: E402

KIND = BY_KEY["addendums"]
# How the plain check gets the records: as given (dicts), or as `cloudadmin load` parses
# their JSON (structs when msgspec took every one of them, else dicts).
FORMS = ("dicts", "parsed")


def as_form(form: str, records: list[Any]) -> list[Any]:
    if form == "dicts":
        return copy.deepcopy(records)
    document = fast_json.parse_bytes(json.dumps({"addendums": records}).encode())
    assert document is not fast_json.NOT_PARSED
    result: list[Any] = document["addendums"]
    return result


def copied(form: str, records: list[Any]) -> list[tuple[Any, ...]] | None:
    return addendum_copy.copy_tuples(as_form(form, records))


def modelled(records: list[Any]) -> list[tuple[Any, ...]] | None:
    """The COPY tuples the models' path builds, None when the models reject a record."""
    try:
        models = KIND.adapter.validate_python(records)
    except ValidationError:
        return None
    ctx = RowContext(secret_box=SecretBox("x" * 32), accounts={})
    rows = [KIND.to_row(model, ctx) for model in models]
    return [tuple(row[column] for column in addendum_copy.COLUMNS) for row in rows]


def same_row(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal values, and instants in the same zone (UTC), as COPY would write them."""
    if a != b:
        return False
    pairs = zip(a, b, strict=True)
    return all(getattr(x, "tzinfo", None) is getattr(y, "tzinfo", None) for x, y in pairs)


# Valid spellings the plain check may leave to the models (it must not get them wrong).
VALID = [
    {},
    {"client": {"id": 2001}},
    {"client": {"id": 2001, "company_name": "Acme"}},
    {"client": None, "payer_id": -5, "provider_id": 2**31 - 1, "reseller_id": 0},
    {"status_at_active_at": "2025-01-01"},
    {"created_at": "2024-12-24t10:00:00.1234567-03:30"},
    {"created_at": "2024-12-24 10:00:00z"},
    {"active_range": {"start": "2025-01-01T00:00:00.5Z"}},
    {"active_range": {"start": "2025-01-01T00:00:00Z", "end": "2026-02-28T23:59:59Z"}},
    {"plan": {"id": -(2**31), "name": "x" * 255}},
    {"plan": {"id": 1, "name": "Größe Über ǅ ß"}},
    {"currency": {"id": 1, "char_code": "USD", "symbol": "US$$$"}},
    {"id": 2**63 - 1, "client_id": 2**31 - 1},
]
# One wrong field each: the plain check must not take any of them.
INVALID = [
    {"id": 0}, {"id": 2**63}, {"id": True}, {"id": 1.0}, {"id": "1"},
    {"client_id": 2**31}, {"client_id": None},
    {"status": "lost"}, {"status": None},
    {"active_range": {"end": None}}, {"active_range": {"start": "2025-01-01"}},
    {"active_range": {"start": "2025-01-01T00:00:00Z", "x": 1}},
    {"active_range": {"start": "2025-02-30T00:00:00Z"}},
    {"active_range": {"start": "2025-01-01T24:00:00Z"}},
    {"active_range": []},
    {"created_at": "2025-01-01T00:00:00"}, {"created_at": 1735689600},
    {"created_at": "2025-01-01T00:00:00+2:00"}, {"created_at": "２０２５-01-01T00:00:00Z"},
    {"currency": {"id": 1, "char_code": "EUR", "symbol": "€"}},
    {"currency": {"id": 3, "char_code": "USD", "symbol": "$"}},
    {"currency": {"id": 1, "char_code": "USD", "symbol": "US$$$$"}},
    {"currency": {"id": 1, "char_code": "USD"}},
    {"plan": {"id": 2**31, "name": "x"}}, {"plan": {"id": 1, "name": "x" * 256}},
    {"plan": {"id": 1, "name": "x\ud800"}}, {"plan": {"id": 1, "name": 5}},
    {"product": {"id": 5, "name": "Cloud", "internal_name": "CDN"}},
    {"product": {"id": 999, "name": "Cloud", "internal_name": "CLOUD"}},
    {"product": {"id": 5, "name": "Cloud", "internal_name": "CLOUD", "x": 1}},
    {"client": {"id": 7}}, {"client": {"company_name": "x"}}, {"client": 2001},
    {"client": {"id": 2001, "company_name": 1}},
    {"payer_id": 2**63}, {"provider_id": 2**31}, {"reseller_id": -1}, {"reseller_id": False},
    {"status_at_active_at": 1}, {"surprise": 1},
]  # fmt: skip


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("fields", VALID, ids=range(len(VALID)))
def test_valid_spellings_give_the_models_rows(fields: dict[str, Any], form: str) -> None:
    records = [addendum(1, **fields)]
    expected = modelled(records)
    assert expected is not None, "the case must be valid"
    got = copied(form, records)
    if got is not None:
        assert all(same_row(a, b) for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("fields", INVALID, ids=range(len(INVALID)))
def test_an_invalid_record_leaves_the_chunk_to_the_models(
    fields: dict[str, Any], form: str
) -> None:
    records = [addendum(1), addendum(2, **fields)]
    assert modelled(records) is None, "the case must be invalid"
    if form == "parsed" and "\\ud800" in json.dumps(records):
        pytest.skip("not parsed by msgspec: json.loads reads it")
    assert copied(form, records) is None


def test_missing_fields_and_non_objects() -> None:
    for name in (
        "id",
        "client_id",
        "status",
        "active_range",
        "created_at",
        "currency",
        "plan",
        "product",
    ):
        record = addendum(1)
        del record[name]
        assert modelled([record]) is None
        assert addendum_copy.copy_tuples([record]) is None
    for other in (None, [], "x", 1):
        assert addendum_copy.copy_tuples([addendum(1), other]) is None


@pytest.mark.parametrize("form", FORMS)
def test_the_generated_landscape_takes_the_plain_check(form: str) -> None:
    """The bench's addendums (every product, status and range shape): the plain check
    builds exactly the models' rows, so a bulk load never pays for pydantic."""
    doc = gen_addendums.generate(3_000, accounts=100)
    records = doc["addendums"]
    expected = modelled(records)
    parsed = as_form(form, records)
    if form == "parsed":
        assert all(type(r) is addendum_copy.AddendumJson for r in parsed)
    got = addendum_copy.copy_tuples(parsed)
    assert expected is not None and got is not None
    assert all(same_row(a, b) for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize("form", FORMS)
def test_random_damage_is_never_taken(form: str) -> None:
    """Random edits of valid records: whatever the plain check takes, the models take
    and turn into the same rows."""
    rng = random.Random(17)
    values: list[Any] = [
        None,
        0,
        -1,
        1,
        5,
        2**31,
        True,
        "",
        "x",
        "USD",
        "CLOUD",
        "active",
        "2025-01-01T00:00:00Z",
        "2025-13-01T00:00:00Z",
        [],
        {},
        1.5,
        {"id": 2001},
        {"id": 1, "char_code": "USD", "symbol": "$"},
        {"start": "2025-01-01T00:00:00Z"},
    ]
    paths = [
        ("id",),
        ("client_id",),
        ("status",),
        ("created_at",),
        ("payer_id",),
        ("reseller_id",),
        ("provider_id",),
        ("client",),
        ("status_at_active_at",),
        ("active_range",),
        ("active_range", "start"),
        ("active_range", "end"),
        ("currency",),
        ("currency", "id"),
        ("currency", "char_code"),
        ("currency", "symbol"),
        ("plan", "id"),
        ("plan", "name"),
        ("product", "id"),
        ("product", "name"),
        ("product", "internal_name"),
        ("other",),
    ]
    taken = 0
    for _ in range(2_000):
        record = addendum(1)
        for _ in range(rng.randint(1, 2)):
            *parents, last = rng.choice(paths)
            target: Any = record
            for name in parents:
                target = target[name]
            if isinstance(target, dict):
                target[last] = rng.choice(values)
        if form == "parsed" and "\\ud800" in json.dumps(record):
            continue
        got = copied(form, [record])
        if got is not None:
            taken += 1
            expected = modelled([record])
            assert expected is not None, record
            assert same_row(got[0], expected[0]), record
    assert taken  # some edits are valid (payer_id 5, reseller_id None, ...)


PLAIN_INSTANTS = st.one_of(
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", fullmatch=True),
    st.datetimes().map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PLAIN_INSTANTS, min_size=1, max_size=5))
def test_instants_read_in_one_call_are_the_models_instants(texts: list[str]) -> None:
    """A chunk's instants spelled as an export spells them are read by msgspec in one
    call: each is the models' instant (tzinfo UTC), or the chunk goes to the models."""
    try:
        expected = [_instant(text) for text in texts]
    except PydanticCustomError:
        expected = None
    try:
        read = addendum_copy._instants(list(texts))
    except addendum_copy._REFUSALS:
        read = None
    if expected is None:
        assert read is None
    elif read is not None:
        assert read == expected and all(
            t.tzinfo is x.tzinfo for t, x in zip(read, expected, strict=True)
        )


def test_instants_of_a_chunk_keep_their_places_among_nulls() -> None:
    values = [None, "2025-01-01T00:00:00Z", msgspec.UNSET, "2025-01-01 00:00:00Z"]
    read = addendum_copy._instants(values)
    assert read[0] is None and read[2] is None
    assert read[1] == read[3] == _instant("2025-01-01T00:00:00Z")
    values[3] = "2025-01-02T00:00:00Z"
    assert addendum_copy._instants(values)[3] == _instant("2025-01-02T00:00:00Z")
