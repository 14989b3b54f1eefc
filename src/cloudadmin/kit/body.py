"""The base of request bodies."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LenientBody(BaseModel):
    """A request body that ignores the fields it does not know: the read-only fields of a
    resource sent back with it, and fields of the real API this service does not keep."""

    model_config = ConfigDict(extra="ignore")
