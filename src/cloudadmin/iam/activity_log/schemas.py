"""Wire shapes of the activity log ."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cloudadmin.kit.page_model import LinkedPage


class ActivityLogRecord(BaseModel):
    id: int
    actions: str = Field(description="Name of the API operation that was called.")
    data: str = Field(description="Request body as JSON text, every secret replaced by ***.")
    user_email: str
    client: int = Field(description="Account the request acted in.")
    token: int = Field(description="Id of the API key that authenticated the request.")
    requested_at: str = Field(description="UTC instant, RFC 3339.")
    path: str
    remote_ip_address: str
    host: str
    method: str
    query_params: str = Field(description="The raw query string.")
    status_code: int
    reverted: bool = Field(description="True when the request's transaction was rolled back.")
    user: int


class ActivityLogPage(LinkedPage):
    """The provider's AccountRequestsSchema: its items are under ``result``."""

    result: list[ActivityLogRecord]
