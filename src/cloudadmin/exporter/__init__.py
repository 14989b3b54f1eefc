"""Writing the landscape as one document (`cloudadmin export`, docs/import.md "Export"):
the format `cloudadmin load` reads, to move a landscape into another deployment. Not a
backup: what the service records while it runs and the uploaded files are left out
(docs/operations.md, "Backup and restore")."""

from cloudadmin.exporter.command import run_export
from cloudadmin.exporter.document import ExportReport, export_document

__all__ = ["ExportReport", "export_document", "run_export"]
