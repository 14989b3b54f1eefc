"""A region's price record and its catalogue row: one model, one mapping.

Both ways prices reach the catalogue use them: the ``prices`` of a ``cloudadmin load``
document (docs/import.md) and a prices file loaded at start (``load_prices_file``). So a
record one accepts the other accepts, and both store it the same way.

Every failure raises ``PydanticCustomError`` so the message reaches the operator as
written here, without pydantic's "Value error, " prefix.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from cloudadmin.kit.ints import Id32


def _decimal(value: Any) -> Any:
    # JSON numbers arrive as Decimal (parse_float=Decimal) or int; floats come from
    # Python callers and go through str() so 0.1 stays 0.1.
    if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
        raise PydanticCustomError("decimal", "must be a number")
    try:
        number = Decimal(str(value)) if isinstance(value, float | str) else Decimal(value)
    except InvalidOperation as exc:
        raise PydanticCustomError("decimal", "must be a number") from exc
    if not number.is_finite():
        raise PydanticCustomError("decimal", "must be a finite number")
    if number < 0:
        raise PydanticCustomError("decimal", "must not be negative")
    return number


def _percent(value: Decimal) -> Decimal:
    if value > 100:
        raise PydanticCustomError("percent", "must be between 0 and 100")
    return value


Amount = Annotated[Decimal, BeforeValidator(_decimal)]
Percent = Annotated[Decimal, BeforeValidator(_decimal), AfterValidator(_percent)]


class PriceRecord(BaseModel):
    """One region's prices, exactly as the load format's ``prices`` (docs/import.md)."""

    # Strict like every import record: "5" is not a region id.
    model_config = ConfigDict(extra="forbid", strict=True)

    region_id: Id32
    currency_code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    flavors: dict[str, Amount] = {}
    volume_types: dict[str, Amount] = {}
    public_ipv4_per_hour: Amount
    tax_percent: Percent = Decimal(0)
    discount_percent: Percent = Decimal(0)


def price_row(record: PriceRecord) -> dict[str, Any]:
    """The ``price_catalogue`` row of ``record``: amounts as decimal text, so they stay
    exact on both databases."""
    return {
        "region_id": record.region_id,
        "currency_code": record.currency_code,
        "flavors": {k: str(v) for k, v in record.flavors.items()},
        "volume_types": {k: str(v) for k, v in record.volume_types.items()},
        "public_ipv4_per_hour": str(record.public_ipv4_per_hour),
        "tax_percent": str(record.tax_percent),
        "discount_percent": str(record.discount_percent),
    }
