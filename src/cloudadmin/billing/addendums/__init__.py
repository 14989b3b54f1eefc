"""Billing addendums: operation 13, GET /billing/org/v1/addendums."""

from cloudadmin.billing.addendums.names import derive_row, fold

__all__ = ["derive_row", "fold"]
