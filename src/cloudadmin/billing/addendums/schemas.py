"""Wire shapes of operation 13: the query parameters and the addendum list envelope."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from cloudadmin.billing.addendums import fields
from cloudadmin.billing.catalogue import CURRENCY_CODES, PRODUCT_IDS, STATUSES
from cloudadmin.kit.ints import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from cloudadmin.kit.page_model import LinkedPage
from cloudadmin.kit.timeparse import parse_date, parse_instant

INT32 = (INT32_MIN, INT32_MAX)
INT64 = (INT64_MIN, INT64_MAX)
NULL = "null"  # spelling of "no value" in payer_id / reseller_id
MAX_LIMIT = 100
DEFAULT_LIMIT = 25
MAX_NAME_LENGTH = 1000

ORDERING_FIELDS = (
    "created_at", "active_range_start", "active_range_end", "id", "client_id",
    "plan_name", "plan_id", "product_name", "product_id",
)  # fmt: skip


# --- query parameter types: each error names the parameter, never an item index ---


def _values(raw: Any) -> list[str]:
    return [raw] if isinstance(raw, str) else list(raw)


def _integers(low: int, high: int, nullable: bool) -> Any:
    def parse(raw: Any) -> Any:
        if raw is None:
            return None
        out: list[int | None] = []
        for value in _values(raw):
            if isinstance(value, int):
                number: int | None = value
            elif nullable and value == NULL:
                number = None
            else:
                text = value.strip()
                if not text.lstrip("+-").isdigit() or not text.isascii():
                    hint = f" or {NULL}" if nullable else ""
                    raise ValueError(f"'{value}' is not a whole number{hint}")
                number = int(text)
            if number is not None and not low <= number <= high:
                raise ValueError(f"{number} is outside {low} to {high}")
            out.append(number)
        return out

    return BeforeValidator(parse)


def _choices(allowed: tuple[str, ...]) -> Any:
    def parse(raw: Any) -> Any:
        if raw is None:
            return None
        out = _values(raw)
        for value in out:
            if value not in allowed:
                raise ValueError(f"'{value}' is not one of {', '.join(allowed)}")
        return out

    return BeforeValidator(parse)


def _instant(allow_date: bool) -> Any:
    def parse(raw: Any) -> Any:
        return parse_instant(raw, allow_date=allow_date) if isinstance(raw, str) else raw

    return BeforeValidator(parse)


def _date(raw: Any) -> Any:
    return parse_date(raw) if isinstance(raw, str) else raw


def _repeatable(description: str, bounds: tuple[int, int], nullable: bool = False) -> str:
    low, high = bounds
    null = f", or `{NULL}` for addendums without one" if nullable else ""
    return f"{description} Repeatable; {low} to {high}{null}."


# Repeatable whole numbers within a column's range; each field adds its description.
Int32List = Annotated[
    list[Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]] | None,
    _integers(INT32_MIN, INT32_MAX, nullable=False),
]
NullableInt64List = Annotated[
    list[Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)] | None] | None,
    _integers(INT64_MIN, INT64_MAX, nullable=True),
]
NullableResellerList = Annotated[
    list[Annotated[int, Field(ge=0, le=INT32_MAX)] | None] | None,
    _integers(0, INT32_MAX, nullable=True),
]


_ACTIVE = "Active period [start, end), end null = never ends."
_FORMATS = "UTC instant: 2025-05-15T12:00:00Z or 2025-05-15 12:00:00"
Instant = Annotated[datetime | None, _instant(False), Field(description=_FORMATS + ".")]
InstantOrDate = Annotated[
    datetime | None,
    _instant(True),
    Field(description=_FORMATS + ", or a date alone (its midnight UTC)."),
]


class AddendumQuery(BaseModel):
    """Query parameters of GET /billing/org/v1/addendums (docs/billing.md)."""

    model_config = ConfigDict(extra="forbid")

    active_after: InstantOrDate = Field(
        None, description=f"Active at some instant after this. {_ACTIVE}"
    )  # noqa: E501
    active_before: InstantOrDate = Field(
        None, description=f"Active at some instant before this. {_ACTIVE}"
    )  # noqa: E501
    active_at: Instant = Field(
        None, description=f"Active at this instant: start <= t < end. {_ACTIVE}"
    )  # noqa: E501
    not_active_at: Instant = Field(None, description="Not active at this instant.")
    active_start_from: Instant = Field(None, description="Start on or after this instant.")
    active_start_to: Instant = Field(None, description="Start on or before this instant.")
    active_end_from: Instant = Field(
        None, description="End on or after this instant (no end counts as later than any instant)."
    )  # noqa: E501
    active_end_to: Instant = Field(
        None, description="End on or before this instant (no end never is)."
    )  # noqa: E501
    created_after: InstantOrDate = Field(None, description="Created strictly after this instant.")  # noqa: E501
    created_before: InstantOrDate = Field(None, description="Created strictly before this instant.")  # noqa: E501
    created_on: Annotated[date | None, BeforeValidator(_date)] = Field(
        None, description="Created on this UTC date (YYYY-MM-DD)."
    )
    addendum_id: Annotated[
        list[Annotated[int, Field(ge=1, le=INT64[1])]] | None,
        _integers(1, INT64[1], False),
        Field(description="Addendum ids (decimal). Repeatable."),
    ] = None
    id: Annotated[int | None, Field(ge=1, le=INT64[1], description="One addendum id.")] = None
    client_id: Int32List = Field(None, description=_repeatable("Client ids.", INT32))
    payer_id: NullableInt64List = Field(None, description=_repeatable("Payer ids.", INT64, True))  # noqa: E501
    provider_id: Int32List = Field(None, description=_repeatable("Provider ids.", INT32))
    reseller_id: NullableResellerList = Field(
        None, description=_repeatable("Reseller ids.", (0, INT32_MAX), True)
    )
    plan_id: Int32List = Field(None, description=_repeatable("Plan ids.", INT32))
    product_id: Int32List = Field(None, description=_repeatable("Product ids.", INT32))
    currency_id: Int32List = Field(
        None, description=_repeatable("Currency ids: 1 US Dollar, 2 Euro.", INT32)
    )
    currency_char_code: Annotated[
        list[Literal["EUR", "USD"]] | None,
        _choices(CURRENCY_CODES),
        Field(description="Currency codes. Repeatable."),
    ] = None
    product_internal_name: Annotated[
        list[str] | None,
        _choices(tuple(PRODUCT_IDS)),
        Field(description="Product internal names. Repeatable."),
    ] = None
    company_name: Annotated[
        str | None,
        Field(
            max_length=MAX_NAME_LENGTH,
            description="Client company name contains this, ignoring case.",
        ),
    ] = None  # noqa: E501
    plan_name: Annotated[
        str | None,
        Field(max_length=MAX_NAME_LENGTH, description="Plan name contains this, ignoring case."),
    ] = None  # noqa: E501
    product_name: Annotated[
        str | None,
        Field(max_length=MAX_NAME_LENGTH, description="Product name contains this, ignoring case."),
    ] = None  # noqa: E501
    status: Annotated[
        list[Literal["upcoming", "active", "paused", "stopped"]] | None,
        _choices(STATUSES),
        Field(description="Statuses. Repeatable."),
    ] = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Page size, 1 to 100.")] = (
        DEFAULT_LIMIT
    )
    offset: Annotated[int, Field(ge=0, le=INT64[1], description="Index of the first result.")] = 0  # noqa: E501
    ordering: Annotated[
        list[str] | None,
        Field(
            description="Comma-separated and/or repeated fields, a leading minus for "
            "descending: " + ", ".join(ORDERING_FIELDS) + ". Always completed by id."
        ),
    ] = None


# --- response ---


Status = Literal["upcoming", "active", "paused", "stopped"]
_WIRE_TYPES: dict[str, Any] = {
    "number": int,
    "nullable number": int | None,
    "string": str,
    "instant": str,  # written by to_json from a datetime: RFC 3339 with a Z
    "nullable instant": str | None,
    "status": Status,
}


def _wire_field(field: fields.AddendumField) -> tuple[Any, Any]:
    if field.origin == fields.COMPUTED:  # only present with active_at
        return _WIRE_TYPES[field.kind] | None, Field(None, description=field.description)
    return _WIRE_TYPES[field.kind], Field(description=field.description)


def _item_model() -> type[BaseModel]:
    """schemas.Addendum, from the field table (fields.py): an object of the table's
    groups, each its own model as the document names it (fields.GROUPS)."""
    members: dict[str, Any] = {}
    for key, node in fields.layout(fields.WIRE):
        if isinstance(node, fields.AddendumField):
            members[key] = _wire_field(node)
        else:
            inner: dict[str, Any] = {k: _wire_field(f) for k, f in node}
            group = create_model(fields.GROUPS[key], **inner)
            members[key] = (group, Field())
    return create_model("Addendum", **members)


Addendum = _item_model()
AddendumPage = create_model("AddendumPage", __base__=LinkedPage, results=(list[Addendum], ...))  # type: ignore[valid-type]
