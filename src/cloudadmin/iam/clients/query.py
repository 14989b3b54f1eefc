"""Wire shapes of GET /iam/clients: its query parameters and its paginated envelope.

The parameters are the provider's (iam_reseller_api.yaml, "Get clients"); what each
one means here is in docs/iam.md, "GET /iam/clients".
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    EmailStr,
    Field,
)

from cloudadmin.iam.clients.products import ACCOUNT_PRODUCTS
from cloudadmin.iam.clients.schemas import Client
from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.ints import INT32_MAX, Id32Filter, PageOffset
from cloudadmin.kit.page_model import LinkedPage
from cloudadmin.kit.timeparse import parse_instant

MAX_LIMIT = 1000
MAX_LIST_ITEMS = 1000  # values of one comma-separated parameter
NULL = "null"  # country_code=null: accounts without a country
ORDERING_FIELDS = ("id", "email", "name", "status", "companyName", "created_at")
ServiceStatusFilter = Literal[
    "new", "trial", "trialend", "active", "paused", "activating", "deleted"
]


def _instant(raw: Any) -> Any:
    return parse_instant(raw) if isinstance(raw, str) else raw


def _parts(raw: Any) -> list[str]:
    """Comma-separated values, from one parameter or several."""
    values = raw if isinstance(raw, list) else [raw]
    return [part.strip() for value in values for part in str(value).split(",")]


def _comma_ints(raw: Any) -> Any:
    """``1,2,3`` -> [1, 2, 3]; each a whole number 1..2³¹−1 (an account or feature id)."""
    if raw is None:
        return raw
    out: list[int] = []
    for part in _parts(raw):
        text = part
        if not text:
            continue
        if not text.isascii() or not text.isdigit():
            raise ValueError(f"'{text}' is not a whole number")
        number = int(text)
        if not 1 <= number <= INT32_MAX:
            raise ValueError(f"{number} is outside 1 to {INT32_MAX}")
        out.append(number)
    if len(out) > MAX_LIST_ITEMS:
        raise ValueError(f"at most {MAX_LIST_ITEMS} values")
    return out


def _comma_products(raw: Any) -> Any:
    if raw is None:
        return raw
    out = [part for part in _parts(raw) if part]
    for name in out:
        if name not in ACCOUNT_PRODUCTS:
            raise ValueError(f"'{name}' is not one of {', '.join(ACCOUNT_PRODUCTS)}")
    return out


def _country(raw: Any) -> Any:
    if not isinstance(raw, str) or raw == NULL:
        return raw
    if len(raw) != 2 or not raw.isascii() or not raw.isalpha():
        raise ValueError("an ISO 3166-1 alpha-2 code (two letters), or null")
    return raw.upper()


Text = Annotated[str | None, Field(max_length=255)]
Instant = Annotated[
    datetime | None,
    BeforeValidator(_instant),
    Field(description="UTC instant: 2025-05-15T12:00:00Z or 2025-05-15 12:00:00."),
]
IdList = Annotated[
    list[int] | None,
    BeforeValidator(_comma_ints),
    Field(description="Comma-separated ids."),
]
Status = Annotated[ServiceStatusFilter | None, Field(description="Status of the service.")]
NO_DATA = " This service keeps no such data about accounts: a value matches no account."


class ClientListQuery(LenientBody):
    """Query parameters of GET /iam/clients; a parameter not listed here is refused
    (web/query_rule.py)."""

    limit: Annotated[
        int | None,
        Field(
            ge=1,
            le=MAX_LIMIT,
            description="Page size, 1 to 1000. With it the answer is a page "
            "`{count, next, previous, results}`; without it, a plain array of "
            "every matching client.",
        ),
    ] = None
    offset: Annotated[PageOffset, Field(description="Index of the first result.")] = 0
    ordering: Annotated[
        list[str] | None,
        Field(
            description="Fields " + ", ".join(ORDERING_FIELDS) + "; a leading minus for "
            "descending; comma-separated or repeated. Always completed by id."
        ),
    ] = None
    email: Annotated[
        EmailStr | None, Field(max_length=254, description="The account e-mail, ignoring case.")
    ] = None
    companyName: Annotated[
        Text,
        Field(  # noqa: N815
            description="Company name contains this, ignoring case."
        ),
    ] = None
    name: Annotated[Text, Field(description="Name contains this, ignoring case.")] = None
    deleted: Annotated[
        str | None,
        Field(
            max_length=255,
            description="`true`: only deleted accounts; `false`: only accounts that are not "
            "deleted; any other value or none: both.",
        ),
    ] = None
    reseller_id: Annotated[Id32Filter | None, Field(description="Reseller ID.")] = None
    seller_id: Annotated[Id32Filter | None, Field(description="Seller ID.")] = None
    custom_id: Annotated[Text, Field(description="The custom ID, exactly.")] = None
    cdn: Status = None
    storage: Status = None
    ddos: Status = None
    dns: Status = None
    cloud: Status = None
    infrastructure_protection: Annotated[
        Status, Field(description="Status of Infrastructure Protection." + NO_DATA)
    ] = None
    connect: Annotated[Status, Field(description="Status of Connect." + NO_DATA)] = None
    min_traffic: Annotated[
        float | None,
        Field(allow_inf_nan=False, description="Allowed traffic volume (GB)." + NO_DATA),
    ] = None
    max_traffic: Annotated[
        float | None,
        Field(allow_inf_nan=False, description="Allowed traffic volume (GB)." + NO_DATA),
    ] = None
    secondaryhostnames: Annotated[Text, Field(description="Secondary hostname." + NO_DATA)] = None
    activated: Annotated[
        bool | None,
        Field(
            description="`true`: accounts with a user who confirmed the e-mail; `false`: "
            "accounts without one."
        ),
    ] = None
    id__in__exclude: Annotated[
        IdList, Field(description="Comma-separated account ids to leave out.")
    ] = None
    bill_type: Annotated[
        str | None, Field(max_length=50, description="The bill type, exactly.")
    ] = None
    users_name: Annotated[
        Text, Field(description="A user's name contains this, ignoring case.")
    ] = None
    users_email: Annotated[
        Text, Field(description="A user's e-mail contains this, ignoring case.")
    ] = None
    created_at_gte: Annotated[Instant, Field(description="Created at or after this.")] = None
    created_at_lte: Annotated[Instant, Field(description="Created at or before this.")] = None
    feature_id_in: Annotated[
        IdList,
        Field(description="Comma-separated feature ids: accounts with any of them, paid or free."),
    ] = None
    is_test: Annotated[bool | None, Field(description="Test accounts or not.")] = None
    client_type: Literal["reseller", "sales", "common"] | None = None
    personal_product_availability: Annotated[
        list[str] | None,
        BeforeValidator(_comma_products),
        Field(
            description="Comma-separated products (" + ", ".join(ACCOUNT_PRODUCTS) + "): "
            "accounts whose own availability enables any of them."
        ),
    ] = None
    promocode: Annotated[Text, Field(description="Promo code." + NO_DATA)] = None
    country_code: Annotated[
        str | None,
        BeforeValidator(_country),
        Field(description="ISO 3166-1 alpha-2 code, any case; `null`: accounts without one."),
    ] = None

    def only_deleted(self) -> bool | None:
        """True: deleted only; False: not deleted only; None: both."""
        return {"true": True, "false": False}.get(self.deleted or "")


class ClientPage(LinkedPage):
    """The provider's ClientsPaginatedArray."""

    results: list[Client]
