"""The price catalogue: per region, hourly prices as exact decimals.

Rows are written by ``cloudadmin load`` (the load format's ``prices`` (docs/import.md)) or by
:func:`load_prices_file` at start; a region without a row prices nothing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.cloud.pricing.records import PriceRecord, price_row
from cloudadmin.db.models import PriceCatalogue, Region


@dataclass(frozen=True, slots=True)
class Prices:
    region_id: int
    currency_code: str
    flavors: dict[str, Decimal]
    volume_types: dict[str, Decimal]
    public_ipv4_per_hour: Decimal
    tax_percent: Decimal
    discount_percent: Decimal


def _dec(value: Any) -> Decimal:
    return Decimal(str(value))


async def prices_of_region(session: AsyncSession, region_id: int) -> Prices | None:
    row = await session.get(PriceCatalogue, region_id)
    if row is None:
        return None
    return Prices(
        region_id=row.region_id,
        currency_code=row.currency_code,
        flavors={k: _dec(v) for k, v in (row.flavors or {}).items()},
        volume_types={k: _dec(v) for k, v in (row.volume_types or {}).items()},
        public_ipv4_per_hour=_dec(row.public_ipv4_per_hour or 0),
        tax_percent=_dec(row.tax_percent or 0),
        discount_percent=_dec(row.discount_percent or 0),
    )


# --- loading a prices file --------------------------------------------------------


class PriceFileError(ValueError):
    """A prices file that cannot be loaded; the message names the place (JSON pointer)."""


def parse_prices(document: Any) -> list[PriceRecord]:
    """A list of price records, or an import document holding them under ``prices``."""
    base = ""
    if isinstance(document, dict):
        unknown = set(document) - {"prices"}
        if unknown:
            raise PriceFileError(f"/{sorted(unknown)[0]}: unknown key (expected 'prices')")
        document = document.get("prices", [])
        base = "/prices"
    if not isinstance(document, list):
        raise PriceFileError(f"{base or '/'}: must be a list of price records")
    records: list[PriceRecord] = []
    seen: set[int] = set()
    for index, raw in enumerate(document):
        try:
            record = PriceRecord.model_validate(raw)
        except PydanticValidationError as exc:
            err = exc.errors()[0]
            where = "/".join(str(p) for p in err["loc"])
            pointer = f"{base}/{index}" + (f"/{where}" if where else "")
            raise PriceFileError(f"{pointer}: {err['msg']}") from exc
        if record.region_id in seen:
            raise PriceFileError(f"{base}/{index}/region_id: region {record.region_id} twice")
        seen.add(record.region_id)
        records.append(record)
    return records


async def upsert_prices(session: AsyncSession, records: list[PriceRecord]) -> None:
    """Writes (or replaces) each region's catalogue; every region must exist."""
    if not records:
        return
    wanted = {r.region_id for r in records}
    found = set(
        (await session.execute(select(Region.id).where(Region.id.in_(wanted)))).scalars().all()
    )
    for index, record in enumerate(records):
        if record.region_id not in found:
            raise PriceFileError(
                f"price record {index}: region_id {record.region_id} does not exist"
            )
    for record in records:
        values = price_row(record)
        del values["region_id"]
        row = await session.get(PriceCatalogue, record.region_id)
        if row is None:
            session.add(PriceCatalogue(region_id=record.region_id, **values))
        else:
            for name, value in values.items():
                setattr(row, name, value)
    await session.flush()


def read_prices_file(path: str | Path) -> list[PriceRecord]:
    """The validated records of a prices JSON file (see :func:`load_prices_file`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceFileError(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        document = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise PriceFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return parse_prices(document)


async def load_prices_file(sessionmaker: async_sessionmaker[AsyncSession], path: str | Path) -> int:
    """Loads a prices JSON file into the catalogue in one transaction.

    The file holds a list of ``prices`` records of the load format (docs/import.md),
    or a document with a ``prices`` key. Existing regions' catalogues are replaced, others are kept.
    Returns the number of catalogues written; raises :class:`PriceFileError`
    (nothing written) when the file is unreadable or a record is wrong.
    """
    records = await asyncio.to_thread(read_prices_file, path)
    async with sessionmaker() as session:
        await upsert_prices(session, records)
        await session.commit()
    return len(records)
