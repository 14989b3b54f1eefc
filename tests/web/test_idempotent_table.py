"""docs/errors.md's table of the operations that take an Idempotency-Key is every one the
app serves with the header, and nothing else: a new keyed endpoint (or a keyed one that
goes) fails here until the table says so."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from cloudadmin.app import create_app
from cloudadmin.config import Settings

ERRORS_MD = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SECTION = "## Idempotent retries"
ROW = re.compile(r"^\|\s*`(GET|POST|PUT|PATCH|DELETE) (/\S*)`\s*\|", re.M)


def documented(text: str) -> set[tuple[str, str]]:
    """The rows of the first table of the section: ``| `METHOD /path` | creates |``."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    table = re.search(r"^\|.*?(?=\n\n)", section, re.M | re.S)
    assert table is not None, f"no table under {SECTION!r} in docs/errors.md"
    return {(m.group(1), m.group(2)) for m in ROW.finditer(table.group(0))}


@cache
def keyed() -> frozenset[tuple[str, str]]:
    """Every operation whose OpenAPI parameters name Idempotency-Key (the header of the
    `Idempotent` dependency)."""
    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="idempotent-table"))
    spec = app.openapi()
    return frozenset(
        (method.upper(), path)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict)
        and "Idempotency-Key" in {p.get("name") for p in op.get("parameters", [])}
    )


def test_the_table_lists_every_keyed_operation():
    assert sorted(documented(ERRORS_MD.read_text(encoding="utf-8"))) == sorted(keyed())


def test_the_app_has_keyed_operations():
    # Guards the discovery itself: were the header renamed, both sides would be empty.
    assert len(keyed()) >= 7
    assert ("POST", "/iam/admin/sellers") in keyed()


def test_a_row_missing_from_the_table_is_noticed():
    text = ERRORS_MD.read_text(encoding="utf-8")
    row = "| `POST /iam/admin/sellers` | a seller |\n"
    assert row in text
    assert ("POST", "/iam/admin/sellers") not in documented(text.replace(row, "", 1))
