"""Loading landscape documents (docs/import.md): `cloudadmin load` and the demo."""

from cloudadmin.importer.command import load_into, parse_document, run_load
from cloudadmin.importer.loader import LoadReport, load_document
from cloudadmin.importer.problems import LoadError, Problem

__all__ = [
    "LoadError",
    "LoadReport",
    "Problem",
    "load_document",
    "load_into",
    "parse_document",
    "run_load",
]
