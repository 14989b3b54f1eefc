"""The documented error body of cloud endpoints' own responses."""

from __future__ import annotations

ERROR_BODY = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
