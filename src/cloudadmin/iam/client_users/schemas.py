"""Wire shapes of a client user: its creation  and its group."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from cloudadmin.iam.clients.schemas import Email, Text255
from cloudadmin.iam.users.schemas import Password
from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.omit import omitted


class Role(BaseModel):
    id: int = Field(description="Group id: 1, 2, 5, 3009 or 3022.")
    name: str = Field(description="Group name matching the id, e.g. Administrators.")


class UserRole(BaseModel):
    """The spec's `user_role` object: it holds one member `user_role` = {id, name}."""

    user_role: Role


def _wrap_flat_role(value: Any) -> Any:
    """Accepts the flat form {"id", "name"} too, as {"user_role": {"id", "name"}}."""
    if isinstance(value, dict) and "user_role" not in value and ("id" in value or "name" in value):
        return {"user_role": value}
    return value


RoleInput = Annotated[
    UserRole,
    BeforeValidator(_wrap_flat_role),
    Field(
        description='`{"user_role": {"id": 1, "name": "Administrators"}}` (as the real '
        'system); the flat form `{"id": 1, "name": "Administrators"}` is accepted too.'
    ),
]


class ClientUserCreate(LenientBody):
    username: Email = Field(description="E-mail address; the login of the new user.")
    password: Password
    user_role: RoleInput
    name: Text255 | None = None


class ClientUser(BaseModel):
    name: str | None
    username: str
    user_role: UserRole


class UserGroup(BaseModel):
    """The provider's UserRole as GET answers it: the user's group in the account
    (left out for a user in no group)."""

    user_role: Role | None = omitted()


class UserGroupChange(LenientBody):
    """The provider's UserRole as PUT takes it: the new group."""

    user_role: Role
