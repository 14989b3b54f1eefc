"""Caseless text matching that is the same on SQLite and PostgreSQL.

Neither database folds case the same way (SQLite's ``lower()`` knows ASCII only;
PostgreSQL's depends on the database's locale), so the folding is done here, in
Python: tables keep folded copies of the names they are searched by (written once per
write), and a search compares folded text with folded text.
"""

from __future__ import annotations

import unicodedata
from typing import Any


def fold(text: str) -> str:
    """Unicode caseless form: NFD, full case folding (``ß`` -> ``ss``), then NFC.

    ``fold(a) in fold(b)`` is the "case-insensitive partial match" of the API.
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def folded_default(source: str) -> Any:
    """SQLAlchemy column default: the folded copy of column ``source`` on insert."""

    def default(context: Any) -> str | None:
        value = context.get_current_parameters().get(source)
        return None if value is None else fold(value)

    return default
