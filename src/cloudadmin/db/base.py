"""Declarative base with an explicit constraint naming convention."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import MetaData, String, Table, Text
from sqlalchemy.orm import DeclarativeBase

from cloudadmin.db.types import Email, LongText, Str255, Url, UTCDateTime

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    # The SQL type of a column declared by its annotation alone (db/types.py).
    type_annotation_map: dict[Any, Any] = {
        datetime: UTCDateTime(),
        Str255: String(255),
        Email: String(254),
        LongText: Text(),
        Url: String(2048),
    }


def table_of(model: type[Base]) -> Table:
    """The table a model is mapped to. SQLAlchemy types ``__table__`` as any FromClause
    (a class may be mapped to a join or a select); ours are all mapped to tables."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to a table")
    return table
