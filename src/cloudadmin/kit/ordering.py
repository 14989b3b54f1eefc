"""``ordering=a,-b`` parameters against a closed set of fields, completed by id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cloudadmin.errors import ValidationError


def parse_ordering(
    values: Iterable[str] | None,
    allowed: Mapping[str, Any],
    *,
    param: str = "ordering",
    tiebreak: Any,
) -> list[Any]:
    """SQL ORDER BY clauses for comma-separated or repeated ``ordering`` values.

    Unknown fields are a 400 naming the parameter; ``tiebreak`` (the id column) is
    appended unless already present so that the order is total and pages are stable.
    """
    clauses: list[Any] = []
    seen: set[str] = set()
    has_tiebreak = False
    for raw in values or []:
        for part in raw.split(","):
            name = part.strip()
            if not name:
                continue
            desc = name.startswith("-")
            field = name[1:] if desc else name
            if field not in allowed:
                choices = ", ".join(sorted(allowed))
                raise ValidationError.field(
                    param, f"Unknown ordering field '{field}'. Choices: {choices}."
                )
            if field in seen:
                continue
            seen.add(field)
            column = allowed[field]
            if column is tiebreak:
                has_tiebreak = True
            clauses.append(column.desc() if desc else column.asc())
    if not has_tiebreak:
        clauses.append(tiebreak.asc())
    return clauses
