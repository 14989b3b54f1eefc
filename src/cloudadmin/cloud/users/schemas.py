"""Wire shapes of cloud users ."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CloudUser(BaseModel):
    activated: bool = Field(description="The user confirmed the e-mail address.")
    email: str
    id: int
    is_admin: bool = Field(description="Member of the Administrators group.")
    name: str = Field(description="The user's name; empty when none was given.")


class CloudUserList(BaseModel):
    count: int = Field(ge=0)
    results: list[CloudUser]
