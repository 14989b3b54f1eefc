"""The addendum table's caseless name copies (kit/caseless.py), for writers that bypass
the ORM."""

from __future__ import annotations

from typing import Any

from cloudadmin.db.models.billing import FOLDED_COLUMNS
from cloudadmin.kit.caseless import fold


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
