"""Every reader and writer of an addendum agrees with the field table
(billing/addendums/fields.py), so that adding a field is one line there plus a migration:
the addendums table, the response schema, the page's columns and items, the JSON
PostgreSQL writes (test_items_json.py holds its bytes), the load's records, rows and
COPY tuples, and the export's records."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from cloudadmin.billing.addendums import export, fields, schemas, service, statements
from cloudadmin.billing.addendums.tables import addendums
from cloudadmin.db.models.billing import FOLDED_COLUMNS
from cloudadmin.exporter.records import addendum_record
from cloudadmin.importer import addendum_copy
from cloudadmin.importer.records import AddendumRecord
from tests.billing.helpers import item_paths

WIRE_PATHS = [f.path for f in fields.WIRE]


def model_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """The model's fields, nested ones by their dotted paths, in order."""
    paths: list[str] = []
    for name, info in model.model_fields.items():
        inner = [a for a in getattr(info.annotation, "__args__", ()) if a is not type(None)]
        nested = info.annotation if isinstance(info.annotation, type) else (inner or [None])[0]
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            paths += model_paths(nested, f"{prefix}{name}.")
        else:
            paths.append(prefix + name)
    return paths


def struct_paths(struct: Any, prefix: str = "") -> list[str]:
    paths: list[str] = []
    for name, kind in zip(struct.__struct_fields__, struct.__annotations__.values(), strict=True):
        nested = [a for a in getattr(kind, "__args__", (kind,)) if hasattr(a, "__struct_fields__")]
        paths += struct_paths(nested[0], f"{prefix}{name}.") if nested else [prefix + name]
    return paths


class TestTheTable:
    def test_every_stored_column_is_in_the_table_once(self):
        derived = set(FOLDED_COLUMNS)  # the name filters' caseless copies: not fields
        stored = [c.name for c in addendums.columns if c.name not in derived]
        assert sorted(fields.STORED_COLUMNS) == sorted(stored)
        assert len(set(fields.STORED_COLUMNS)) == len(fields.STORED_COLUMNS)

    def test_paths_are_unique_and_their_objects_named(self):
        paths = [f.path for f in fields.FIELDS]
        assert len(set(paths)) == len(paths)
        groups = {f.group for f in fields.FIELDS} - {None}
        assert groups == set(fields.GROUPS)

    def test_what_is_not_stored_has_its_origin(self):
        for field in fields.FIELDS:
            if field.origin in (fields.JOINED, fields.COMPUTED):
                assert field.column is None, field
            else:
                assert field.column in fields.STORED_COLUMNS, field


class TestTheReaders:
    def test_the_response_schema(self):
        assert model_paths(schemas.Addendum) == WIRE_PATHS
        component_names = {
            info.annotation.__name__
            for info in schemas.Addendum.model_fields.values()
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
        }
        assert component_names == set(fields.GROUPS.values())

    def test_the_page_columns_and_items(self):
        assert [c.key for c in statements.PAGE_COLUMNS] == [f.column for f in fields.PAGE_FIELDS]
        start = datetime(2025, 1, 1, tzinfo=UTC)
        values = {"active_start": start, "active_end": None, "created_at": start}
        row = tuple(values.get(f.column or "", i) for i, f in enumerate(fields.PAGE_FIELDS))
        item = service._out((*row, None), start)
        assert item_paths(item) == WIRE_PATHS
        assert item["client"] == {"id": item["client_id"], "company_name": ""}
        assert "status_at_active_at" not in service._out((*row, "Acme"), None)

    def test_the_csv_download(self):
        """A line is the list's item flattened, without the repeated client.id."""
        row = tuple(range(len(fields.PAGE_FIELDS))) + ("Acme",)
        paths = [p for p in item_paths(service._out(row, None)) if p != "client.id"]
        assert list(export.HEADER) == [p.replace(".", "_") for p in paths]

    def test_the_load_and_its_copy(self):
        paths = [f.path for f in fields.FIELDS]
        assert model_paths(AddendumRecord) == paths
        assert struct_paths(addendum_copy.AddendumJson) == paths
        columns = addendum_copy.COLUMNS
        assert columns == fields.STORED_COLUMNS + tuple(FOLDED_COLUMNS)

    def test_the_export(self):
        row = {column: None for column in fields.STORED_COLUMNS}
        assert item_paths(addendum_record(row)) == [f.path for f in fields.STORED_FIELDS]
