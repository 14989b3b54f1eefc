"""Writing the whole database as one landscape document (`cloudadmin export`,
docs/import.md "Export"): the format `cloudadmin load` reads."""

from cloudadmin.exporter.command import run_export
from cloudadmin.exporter.document import ExportReport, export_document

__all__ = ["ExportReport", "export_document", "run_export"]
