"""Caseless text matching that is the same on SQLite and PostgreSQL.

Neither database folds case the same way (SQLite's ``lower()`` knows ASCII only;
PostgreSQL's depends on the database's locale), so the folding is done here, in
Python, once per write: the addendum table keeps folded copies of the names it is
searched by, and a search compares folded text with folded text.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Folded copies kept beside the names they are computed from.
FOLDED_COLUMNS: dict[str, str] = {
    "plan_name_folded": "plan_name",
    "product_name_folded": "product_name",
}


def fold(text: str) -> str:
    """Unicode caseless form: NFD, full case folding (``ß`` -> ``ss``), then NFC.

    ``fold(a) in fold(b)`` is the "case-insensitive partial match" of the API.
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def derive_row(row: dict[str, Any]) -> dict[str, Any]:
    """The addendum row with its derived columns filled in (a new dict).

    For writers that bypass the ORM (the importer's batched upserts): call it on
    every row before the INSERT .. ON CONFLICT so that a second load that renames a
    plan also updates its folded copy. Rows without a name keep whatever is derived
    from it untouched.
    """
    out = dict(row)
    for folded, source in FOLDED_COLUMNS.items():
        if source in row and row[source] is not None:
            out[folded] = fold(row[source])
    return out


def _default_from(source: str) -> Any:
    def default(context: Any) -> str | None:
        value = context.get_current_parameters().get(source)
        return None if value is None else fold(value)

    return default


def column_default(folded: str) -> Any:
    """SQLAlchemy column default computing ``folded`` from its source column on insert."""
    return _default_from(FOLDED_COLUMNS[folded])
