"""Addendums straight to COPY tuples, for a bulk load (importer/bulk.py).

pydantic's validation of an ``AddendumRecord`` (five nested models, three
model-level checks and three instants parsed by a Python validator) cost about
30 µs of CPU per addendum, the largest part of a million-addendum load. An
addendum has a fixed, flat shape, so this module checks a chunk with plain
Python and builds its COPY rows in the same step.

It only ever *accepts*: a chunk with anything it is not sure of (one invalid
record, an unusual but valid spelling) gets None, and the caller validates that
chunk with pydantic as before. So every problem, its message and its order
still come from the models (records.AddendumRecord), and this module must
accept nothing those models reject. ``tests/importer/test_addendum_copy.py``
holds it to the models on valid and invalid records.

A chunk that pydantic then finds valid is a *fallback*, as db/driver.py's replays
are: a slowdown nobody would otherwise see, counted (:func:`fallback_count`) and
logged as a warning, and the importer's tests fail on one they did not expect
(tests/importer/conftest.py). Only the refusals this module means (``_REFUSALS``)
lead to pydantic; any other exception is a bug here and propagates as it is.

A document parsed by importer/fast_json.py may hold its addendums as ``AddendumJson``
structs instead of dicts: msgspec checked their keys, JSON types, integer bounds and
text lengths while it decoded them (as the models would, or more strictly), so only
what msgspec cannot say is checked here (instants, the known currencies and products,
``client.id``).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType
from pydantic_core import PydanticCustomError

from cloudadmin.billing.catalogue import CURRENCIES, PRODUCTS
from cloudadmin.importer.fields import _instant
from cloudadmin.importer.records import AddendumStatus
from cloudadmin.kit.caseless import fold
from cloudadmin.kit.ints import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

log = logging.getLogger(__name__)

# The columns of a COPY tuple, in order (the row rows.addendum_row builds).
COLUMNS = (
    "id", "client_id", "payer_id", "provider_id", "reseller_id", "status",
    "active_start", "active_end", "created_at", "currency_id", "currency_char_code",
    "currency_symbol", "plan_id", "plan_name", "product_id", "product_name",
    "product_internal_name", "plan_name_folded", "product_name_folded",
)  # fmt: skip

_REQUIRED = frozenset(
    ("id", "client_id", "status", "active_range", "created_at", "currency", "plan", "product")
)
_FIELDS = _REQUIRED | {"client", "payer_id", "provider_id", "reseller_id", "status_at_active_at"}
_STATUSES = frozenset(("upcoming", "active", "paused", "stopped"))
_RANGE = frozenset(("start", "end"))
_CURRENCY = frozenset(("id", "char_code", "symbol"))
_PLAN = frozenset(("id", "name"))
_PRODUCT = frozenset(("id", "name", "internal_name"))
_CLIENT = frozenset(("id", "company_name"))
_START = frozenset(("start",))
_CLIENT_ID = frozenset(("id",))

# The spelling export writes: datetime.fromisoformat reads it as _instant does
# (same instant, tzinfo UTC) at a third of the cost; any other goes through _instant.
_PLAIN_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").fullmatch


Int32 = Annotated[int, Meta(ge=INT32_MIN, le=INT32_MAX)]
Id = Annotated[int, Meta(ge=1, le=INT32_MAX)]


# An addendum's plain shape (records.AddendumRecord and its parts), for msgspec. Unknown
# keys are refused, as the models refuse them; a key that may be left out defaults to
# UNSET, so that fast_json.plain gives back the object as it was. gc=False: these hold
# only numbers, strings and each other, never a cycle, and a million of them would
# otherwise be in the cyclic collector's way.
class _Range(Struct, forbid_unknown_fields=True, gc=False):
    start: str  # an instant: _instant_of
    end: str | None | UnsetType = UNSET


class _Currency(Struct, forbid_unknown_fields=True, gc=False):
    id: int
    char_code: str
    symbol: Annotated[str, Meta(max_length=5)]


class _Plan(Struct, forbid_unknown_fields=True, gc=False):
    id: Int32
    name: Annotated[str, Meta(max_length=255)]


class _Product(Struct, forbid_unknown_fields=True, gc=False):
    id: int
    name: Annotated[str, Meta(max_length=255)]
    internal_name: str


class _Client(Struct, forbid_unknown_fields=True, gc=False):
    id: Id
    company_name: str | None | UnsetType = UNSET


class AddendumJson(Struct, forbid_unknown_fields=True, gc=False):
    id: Annotated[int, Meta(ge=1, le=INT64_MAX)]
    client_id: Id
    status: AddendumStatus
    active_range: _Range
    created_at: str
    currency: _Currency
    plan: _Plan
    product: _Product
    client: _Client | None | UnsetType = UNSET
    payer_id: Annotated[int, Meta(ge=INT64_MIN, le=INT64_MAX)] | None | UnsetType = UNSET
    provider_id: Int32 | None | UnsetType = UNSET
    reseller_id: Annotated[int, Meta(ge=0, le=INT32_MAX)] | None | UnsetType = UNSET
    status_at_active_at: str | None | UnsetType = UNSET


class _Unsure(Exception):
    """Not plainly valid: pydantic decides."""


# What the checks raise on a value they do not take: their own doubt, an instant
# fields._instant refuses, a text with a lone surrogate (str.encode).
_REFUSALS = (_Unsure, PydanticCustomError, UnicodeEncodeError)

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


def _int(value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise _Unsure
    return value


def _optional_int(value: Any, low: int, high: int) -> int | None:
    return None if value is None else _int(value, low, high)


def _text(value: Any, max_length: int | None = None) -> str:
    if type(value) is not str or (max_length is not None and len(value) > max_length):
        raise _Unsure
    if not value.isascii():
        value.encode()  # pydantic rejects a lone surrogate (JSON "\\ud800"); so does this
    return value


def _object(value: Any, fields: frozenset[str], required: frozenset[str]) -> dict[str, Any]:
    if type(value) is not dict or not value.keys() <= fields or not required <= value.keys():
        raise _Unsure
    return value


def copy_tuples(chunk: list[Any]) -> list[tuple[Any, ...]] | None:
    """The COPY tuples (``COLUMNS``) of ``chunk``'s addendums when every one is plainly
    valid; None when pydantic must look at the chunk."""
    folded: dict[str, str] = {}  # a few hundred plan and product names in a million rows
    out: list[tuple[Any, ...]] = []
    append = out.append
    tuple_of = _typed_tuple if chunk and type(chunk[0]) is AddendumJson else _tuple
    try:
        for raw in chunk:
            append(tuple_of(raw, folded))
    except _REFUSALS:
        return None
    return out


def _tuple(raw: Any, folded: dict[str, str]) -> tuple[Any, ...]:
    # The checks of _object and _int written out: called a few times per addendum,
    # the function calls alone were a fifth of this check's time.
    if type(raw) is not dict:
        raise _Unsure
    rec: dict[str, Any] = raw
    keys = rec.keys()
    if not keys <= _FIELDS or not keys >= _REQUIRED:
        raise _Unsure
    ident = rec["id"]
    if type(ident) is not int or not 1 <= ident <= INT64_MAX:
        raise _Unsure
    client_id = rec["client_id"]
    if type(client_id) is not int or not 1 <= client_id <= INT32_MAX:
        raise _Unsure
    status = rec["status"]
    if type(status) is not str or status not in _STATUSES:
        raise _Unsure
    span = _object(rec["active_range"], _RANGE, _START)
    start = _instant_of(span["start"])
    end = span.get("end")
    end = None if end is None else _instant_of(end)
    created_at = _instant_of(rec["created_at"])
    currency = rec["currency"]
    if type(currency) is not dict or currency.keys() != _CURRENCY:
        raise _Unsure
    currency_id = currency["id"]
    char_code = currency["char_code"]
    if type(currency_id) is not int or type(char_code) is not str:
        raise _Unsure
    if CURRENCIES.get(currency_id) != char_code:  # a known id: within int64
        raise _Unsure
    symbol = _text(currency["symbol"], 5)
    plan = rec["plan"]
    if type(plan) is not dict or plan.keys() != _PLAN:
        raise _Unsure
    plan_id = plan["id"]
    if type(plan_id) is not int or not INT32_MIN <= plan_id <= INT32_MAX:
        raise _Unsure
    plan_name = _text(plan["name"], 255)
    product = rec["product"]
    if type(product) is not dict or product.keys() != _PRODUCT:
        raise _Unsure
    product_id = product["id"]
    internal_name = product["internal_name"]
    if type(product_id) is not int or type(internal_name) is not str:
        raise _Unsure
    # A known id and its own internal name: within int64, and text the models take.
    if PRODUCTS.get(product_id) != internal_name:
        raise _Unsure
    product_name = _text(product["name"], 255)
    client = rec.get("client")
    if client is not None:
        client = _object(client, _CLIENT, _CLIENT_ID)
        if _int(client["id"], 1, INT32_MAX) != client_id:
            raise _Unsure
        company = client.get("company_name")
        if company is not None:
            _text(company)
    detail = rec.get("status_at_active_at")
    if detail is not None:
        _text(detail)
    plan_folded = folded.get(plan_name)
    if plan_folded is None:
        plan_folded = folded[plan_name] = fold(plan_name)
    product_folded = folded.get(product_name)
    if product_folded is None:
        product_folded = folded[product_name] = fold(product_name)
    return (
        ident, client_id,
        _optional_int(rec.get("payer_id"), INT64_MIN, INT64_MAX),
        _optional_int(rec.get("provider_id"), INT32_MIN, INT32_MAX),
        _optional_int(rec.get("reseller_id"), 0, INT32_MAX),
        status, start, end, created_at, currency_id, char_code, symbol, plan_id, plan_name,
        product_id, product_name, internal_name, plan_folded, product_folded,
    )  # fmt: skip


def _typed_tuple(rec: AddendumJson, folded: dict[str, str]) -> tuple[Any, ...]:
    # msgspec checked the rest while decoding (AddendumJson); a lone surrogate escape,
    # which the models refuse, it refuses to decode at all.
    currency, plan, product, span = rec.currency, rec.plan, rec.product, rec.active_range
    if CURRENCIES.get(currency.id) != currency.char_code:
        raise _Unsure
    if PRODUCTS.get(product.id) != product.internal_name:
        raise _Unsure
    client = rec.client
    if client is not UNSET and client is not None and client.id != rec.client_id:
        raise _Unsure
    end = span.end
    plan_name, product_name = plan.name, product.name
    plan_folded = folded.get(plan_name)
    if plan_folded is None:
        plan_folded = folded[plan_name] = fold(plan_name)
    product_folded = folded.get(product_name)
    if product_folded is None:
        product_folded = folded[product_name] = fold(product_name)
    payer, provider, reseller = rec.payer_id, rec.provider_id, rec.reseller_id
    return (
        rec.id, rec.client_id,
        None if payer is UNSET else payer,
        None if provider is UNSET else provider,
        None if reseller is UNSET else reseller,
        rec.status, _instant_of(span.start),
        None if end is None or end is UNSET else _instant_of(end),
        _instant_of(rec.created_at), currency.id, currency.char_code, currency.symbol,
        plan.id, plan_name, product.id, product_name, product.internal_name,
        plan_folded, product_folded,
    )  # fmt: skip
