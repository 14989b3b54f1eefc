"""The addendum's fields, declared once, in the wire's order.

Everything that carries an addendum is generated from ``FIELDS``: the response schema
(schemas.Addendum), the page's columns and their shaping into items (statements.py,
service.py), the JSON PostgreSQL writes (items_json.py), the load's records, rows and
COPY tuples (importer/records.py, rows.py, addendum_copy.py) and the export's records
(exporter/records.py). Adding a field to the addendum is one line here plus a migration
of the addendums table; tests/billing/test_fields.py holds every reader to this table.

A field is stored in the addendums table (``COLUMN``: on the wire; ``STORED``: loaded
and exported, never listed) or is not: the client's name comes from the clients join
(``JOINED``, NULL written as ""), ``client.id`` repeats ``client_id`` (``REPEATS``: a
load checks that it does), and ``status_at_active_at`` is computed, present only when
the request gives ``active_at`` (``COMPUTED``). A load accepts the fields that are not
stored and keeps none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cloudadmin.billing.catalogue import CURRENCY_CODES
from cloudadmin.kit.ints import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

Kind = Literal["number", "nullable number", "string", "instant", "nullable instant", "status"]
Origin = Literal["column", "stored", "joined", "repeats", "computed"]
COLUMN: Origin = "column"
STORED: Origin = "stored"
JOINED: Origin = "joined"
REPEATS: Origin = "repeats"
COMPUTED: Origin = "computed"

ID32 = (1, INT32_MAX)
ID64 = (1, INT64_MAX)
INT32 = (INT32_MIN, INT32_MAX)
INT64 = (INT64_MIN, INT64_MAX)

_RFC3339 = "UTC instant, RFC 3339"


@dataclass(frozen=True, slots=True)
class AddendumField:
    """One field: ``path`` on the wire (``currency.char_code``), ``column`` in the
    addendums table (for ``REPEATS``, the column it repeats; None where there is none),
    ``kind``, and the bounds a load holds it to: ``bounds`` of a number, ``max_length``
    of a text, ``known`` values of a text (the wire's schema says only "string")."""

    path: str
    column: str | None
    kind: Kind
    origin: Origin = COLUMN
    description: str | None = None
    bounds: tuple[int, int] | None = None
    max_length: int | None = None
    known: tuple[str, ...] | None = None

    @property
    def key(self) -> str:
        """Its name in its object."""
        return self.path.rpartition(".")[2]

    @property
    def group(self) -> str | None:
        """The object it is in (None: the addendum itself)."""
        return self.path.rpartition(".")[0] or None


F = AddendumField
FIELDS: tuple[AddendumField, ...] = (
    F("id", "id", "number", bounds=ID64),
    F("client_id", "client_id", "number", bounds=ID32),
    F("client.id", "client_id", "number", REPEATS, bounds=ID32),
    F("client.company_name", None, "string", JOINED),
    F("payer_id", "payer_id", "nullable number", STORED, bounds=INT64),
    F("provider_id", "provider_id", "nullable number", STORED, bounds=INT32),
    F("reseller_id", "reseller_id", "nullable number", STORED, bounds=(0, INT32_MAX)),
    F("status", "status", "status"),
    F("active_range.start", "active_start", "instant", description=f"{_RFC3339}; the first instant of the period."),  # noqa: E501
    F("active_range.end", "active_end", "nullable instant", description=f"{_RFC3339}; the period ends just before it. Null: the period does not end."),  # noqa: E501
    F("created_at", "created_at", "instant", description=f"{_RFC3339}."),
    F("currency.id", "currency_id", "number"),
    F("currency.char_code", "currency_char_code", "string", known=CURRENCY_CODES),
    F("currency.symbol", "currency_symbol", "string", max_length=5),
    F("plan.id", "plan_id", "number", bounds=INT32),
    F("plan.name", "plan_name", "string", max_length=255),
    F("product.id", "product_id", "number"),
    F("product.name", "product_name", "string", max_length=255),
    F("product.internal_name", "product_internal_name", "string"),
    F("status_at_active_at", None, "status", COMPUTED, description="Present only when active_at is given: the status at that instant."),  # noqa: E501
)  # fmt: skip

# The wire's objects inside an addendum, by the name their schema has.
GROUPS = {
    "client": "AddendumClient",
    "active_range": "ActiveRange",
    "currency": "Currency",
    "plan": "Plan",
    "product": "Product",
}

WIRE = tuple(f for f in FIELDS if f.origin != STORED)
# The addendums table's columns that a load writes and an export reads, in order.
STORED_FIELDS = tuple(f for f in FIELDS if f.origin in (COLUMN, STORED))
STORED_COLUMNS = tuple(f.column for f in STORED_FIELDS if f.column)
# The columns of a page's row, in order; the client's name follows them.
PAGE_FIELDS = tuple(f for f in WIRE if f.origin == COLUMN)

Members = tuple[tuple[str, AddendumField], ...]
Layout = tuple[tuple[str, AddendumField | Members], ...]


def layout(fields: tuple[AddendumField, ...]) -> Layout:
    """``fields`` as their objects nest: (key, field) for a value, (key, members) for an
    object, in the table's order (an object where its first field is)."""
    out: list[tuple[str, AddendumField | Members]] = []
    for field in fields:
        group = field.group
        if group is None:
            out.append((field.key, field))
        elif all(key != group for key, _ in out):
            out.append((group, tuple((f.key, f) for f in fields if f.group == group)))
    return tuple(out)


def optional(node: AddendumField | Members) -> bool:
    """Whether a load may leave it out: a null, the client's name, a computed field, or
    an object none of whose fields is stored (the client; its ``id`` it must give)."""
    if isinstance(node, AddendumField):
        return node.kind.startswith("nullable ") or node.origin in (JOINED, COMPUTED)
    return all(field not in STORED_FIELDS for _, field in node)
