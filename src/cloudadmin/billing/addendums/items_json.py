"""PostgreSQL writes the page's items as JSON text, byte for byte what the service would
write from the rows (``service._out`` serialised by ``pydantic_core.to_json``).

Why: where the database's share of a request is light, the list's server is bound by
its own CPU and PostgreSQL's backends are not. Decoding a page of 25 rows of 15 columns
into Python objects, building their dicts and writing them was about a fifth of the
server's CPU per small-client request (1.35-1.43 ms before, 1.05-1.19 ms after; docs/
performance.md, "Why the database writes the page's items"). The database
pays about 7 µs a row for the writing, so the service asks for it only where its share
is light (plan.Plan.database_writes).

The text is compact JSON with the keys in the wire's order (fields.FIELDS). Strings
go through ``to_json``, which escapes as pydantic_core does (``\\"``, ``\\\\``, ``\\b``,
``\\f``, ``\\n``, ``\\r``, ``\\t``, other control characters as ``\\u00xx``; the rest as
UTF-8); instants are written in UTC with a ``Z`` and their microseconds only when there
are any, as pydantic_core writes a datetime. tests/billing/test_items_json.py holds the
two writers to the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import LargeBinary, Text, case, func, literal_column
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.sql.elements import ColumnElement

from cloudadmin.billing.addendums import fields
from cloudadmin.billing.addendums.fields import AddendumField, Layout


def _sql(text: str) -> ColumnElement[Any]:
    """A constant written into the statement (not a bound value: a page's statement is
    built once and binds only the request's values)."""
    return literal_column(text, Text)


def _piece(text: str) -> ColumnElement[Any]:
    """A fixed piece of the JSON text, written as an SQL string constant."""
    if "'" in text:  # the pieces are this module's own; none needs SQL's quote
        raise ValueError(f"a piece of JSON text with a quote: {text!r}")
    return _sql(f"'{text}'")


_NULL = _piece("null")


def _string(column: ColumnElement[Any]) -> ColumnElement[Any]:
    return func.coalesce(func.to_json(column).cast(Text), _NULL)


def _instant(column: ColumnElement[Any]) -> ColumnElement[Any]:
    # '.000000' can only be the microseconds: the rest of the text has no dot.
    utc = func.timezone(_sql("'UTC'"), column)
    written = func.to_char(utc, _sql("""'YYYY-MM-DD"T"HH24:MI:SS.US'"""))
    text = _piece('"') + func.replace(written, _piece(".000000"), _sql("''")) + _piece('Z"')
    # to_char writes no infinity: asyncpg reads -infinity and infinity as Python's first
    # and last instants (datetime.min and .max), which the service writes as these.
    unwritten = case(
        (column.is_(None), _NULL),
        (column < _sql("'epoch'"), _piece('"0001-01-01T00:00:00Z"')),
        else_=_piece('"9999-12-31T23:59:59.999999Z"'),
    )
    return func.coalesce(text, unwritten)  # only worked out when the text is NULL


def _number(column: ColumnElement[Any]) -> ColumnElement[Any]:
    return func.coalesce(column.cast(Text), _NULL)


def _value(row: Any, company_name: ColumnElement[Any], field: AddendumField) -> Any:
    if field.origin == fields.JOINED:  # no client: the empty name, as the service writes
        return _string(func.coalesce(company_name, _sql("''")))
    column = row.c[field.column]
    if field.kind in ("instant", "nullable instant"):
        return _instant(column)
    return _number(column) if field.kind in ("number", "nullable number") else _string(column)


def _parts(row: Any, company_name: ColumnElement[Any], entries: Layout) -> Iterator[Any]:
    """The object of ``entries`` as fixed pieces of text and values, in order."""
    opening = "{"
    for key, node in entries:
        yield f'{opening}"{key}":'
        opening = ","
        if isinstance(node, AddendumField):
            yield _value(row, company_name, node)
        else:
            yield from _parts(row, company_name, node)
    yield "}"


# What the database writes: the wire's fields, but for the one worked out per request.
_WRITTEN = fields.layout(tuple(f for f in fields.WIRE if f.origin != fields.COMPUTED))


def item(row: Any, company_name: ColumnElement[Any]) -> ColumnElement[Any]:
    """One addendum as the wire has it (fields.WIRE), from the page's row (an alias of
    the addendums table) and its client's name."""
    pieces: list[Any] = []
    for part in _parts(row, company_name, _WRITTEN):
        if isinstance(part, str) and pieces and isinstance(pieces[-1], str):
            pieces[-1] += part  # '}' and ',"status":' are one piece: '},"status":'
        else:
            pieces.append(part)
    # concat() takes every piece in one call (a chain of || would be one call a piece).
    return func.concat(*(_piece(p) if isinstance(p, str) else p for p in pieces))


def items(row: Any, company_name: ColumnElement[Any], order: Any) -> ColumnElement[Any]:
    """The page's items in its order, joined by commas: the inside of the results array
    (b'' for an empty page), as UTF-8 bytes. An aggregate: the statement gives one row
    whatever the page."""
    joined = func.string_agg(item(row, company_name), aggregate_order_by(_piece(","), *order))
    # Bytes, not text: the driver would decode text into a str that the service encodes
    # again for the body, 5 % of a request's instructions when a name is not Latin-1
    # (valgrind; docs/performance.md, "Why the database writes the page's items").
    return func.convert_to(func.coalesce(joined, _sql("''")), _sql("'UTF8'"), type_=LargeBinary)
