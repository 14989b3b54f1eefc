"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Integer, TypeDecorator
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import mapped_column

# SQLite only makes "INTEGER PRIMARY KEY" an auto-incrementing rowid alias.
BigIntId = BigInteger().with_variant(Integer(), "sqlite")

# JSONB on PostgreSQL (indexable, compact), JSON text on SQLite.
JSONType = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes in, timezone-aware UTC datetimes out.

    SQLite has no time zone type; values are stored as naive UTC and given their
    zone back on the way out, so code never sees a naive datetime.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        # The impl (DateTime) has already turned what the driver gave into a datetime.
        stored: datetime = value
        if stored.tzinfo is None:
            return stored.replace(tzinfo=UTC)
        return stored.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


# The column types the models repeat, named once. ``Str255``, ``Email``, ``LongText``
# and ``Url`` are SQL types by db.base.Base.type_annotation_map (which also makes every
# ``Mapped[datetime]`` a UTCDateTime and leaves ``Mapped[int]`` an Integer), so that
# ``name: Mapped[Str255 | None]`` declares a nullable VARCHAR(255); the others carry
# their whole column.
Str255 = Annotated[str, 255]
Email = Annotated[str, 254]  # the longest address SMTP carries
LongText = Annotated[str, "text"]
Url = Annotated[str, 2048]  # a URL, or the path and query of one

IntKey = Annotated[int, mapped_column(Integer, primary_key=True)]
BigIntKey = Annotated[int, mapped_column(BigIntId, primary_key=True)]
# A key (or a part of one) the writer gives, never numbered by the database.
GivenIntKey = Annotated[int, mapped_column(Integer, primary_key=True, autoincrement=False)]
FalseByDefault = Annotated[bool, mapped_column(Boolean, default=False)]
TrueByDefault = Annotated[bool, mapped_column(Boolean, default=True)]
