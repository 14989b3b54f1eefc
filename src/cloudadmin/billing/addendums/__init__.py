"""Billing addendums: operation 13, GET /billing/org/v1/addendums."""

from cloudadmin.billing.addendums.names import derive_row

__all__ = ["derive_row"]
