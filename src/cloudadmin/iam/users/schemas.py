"""Wire shapes of users: creation , the User resource, its list and PATCH."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator

from cloudadmin.iam.clients.schemas import (
    AccountId,
    AuthType,
    CompanyName,
    Email,
    EmbeddedUser,
    Lang,
    PhoneText,
    Product,
    Text255,
)
from cloudadmin.iam.users.countries import COUNTRY_CODES
from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.ints import Int32
from cloudadmin.kit.omit import Omittable, PartialUpdate
from cloudadmin.kit.page_model import LinkedPage


def _country(value: str) -> str:
    code = value.upper()
    if code not in COUNTRY_CODES:
        raise ValueError("Enter an ISO 3166-1 alpha-2 country code, e.g. DE.")
    return code


CountryCode = Annotated[
    str, Field(min_length=2, max_length=2, pattern=r"^[A-Za-z]{2}$"), AfterValidator(_country)
]
Password = Annotated[str, Field(json_schema_extra={"format": "password", "writeOnly": True})]


class ServiceAvailability(BaseModel):
    product_name: Product
    available: bool | None = Field(
        description="null: inherit the reseller's default; true: available to this "
        "client (still to be enabled by a service status change); false: unavailable."
    )


class UserCreate(LenientBody):
    email: Email = Field(description="Login of the user; the client's e-mail by default.")
    password: Password
    company: CompanyName = Field(description="The new client's company name (unique).")
    user_type: Literal["common"] = "common"
    name: Text255 | None = Field(default=None, description="The client's name by default.")
    phone: PhoneText | None = Field(default=None, description="The client's phone by default.")
    seller: AccountId | None = Field(default=None, description="One of the reseller's sellers.")
    services: list[ServiceAvailability] | None = None
    lang: Lang = "en"
    custom_id: Text255 | None = None
    country_code: CountryCode | None = None
    is_test: bool = False
    reseller: AccountId | None = Field(
        default=None,
        description="Operators only: the reseller account the new client belongs to "
        "(defaults to the operator's own account when that is a reseller).",
    )

    @field_validator("services")
    @classmethod
    def _one_entry_per_product(
        cls, value: list[ServiceAvailability] | None
    ) -> list[ServiceAvailability] | None:
        names = [s.product_name for s in value or []]
        if len(names) != len(set(names)):
            raise ValueError("Each product_name may appear only once.")
        return value


class ClientAndRoles(BaseModel):
    client_id: int
    client_company_name: str
    user_roles: list[str] = Field(description='Group ids as strings, e.g. ["1"].')
    user_id: int


class User(EmbeddedUser):
    """The provider's User: the embedded fields plus type, activity and roles."""

    user_type: Literal["common", "reseller", "seller"]
    is_active: bool
    client_and_roles: list[ClientAndRoles]


class UserCreated(User):
    """The answer of POST /iam/users: the new User."""


class UserPage(LinkedPage):
    """The provider's PaginatedUsersArray."""

    results: list[User]


class UserPatch(PartialUpdate):
    """The provider's PutUser, as a partial update: an absent field is left untouched.
    `name` and `phone` take null; the read-only User fields sent along are ignored."""

    email: Omittable[Email] = None
    name: Text255 | None = None
    lang: Omittable[Lang] = None
    phone: PhoneText | None = None
    auth_types: Omittable[list[AuthType]] = Field(
        default=None,
        max_length=4,
        description="Each of password, sso, github, google-oauth2 at most once.",
    )

    @field_validator("auth_types")
    @classmethod
    def _each_auth_type_once(cls, value: list[str]) -> list[str]:
        if len(value) != len(set(value)):
            raise ValueError("Each auth type may appear only once.")
        return value


class GroupIn(LenientBody):
    """The provider's Group: the id, the name, or both (which must agree)."""

    id: Int32 | None = Field(default=None, description="Group id: 1, 2, 5, 3009 or 3022.")
    name: str | None = Field(default=None, max_length=100, description="Group name.")


class InviteUser(LenientBody):
    """The provider's InviteUserRequest."""

    email: Email = Field(description="The invited user's e-mail address (its login).")
    user_role: GroupIn = Field(description="The user's group in the account.")
    client_id: AccountId = Field(description="The account the user is invited to.")
    lang: Lang = Field(default="en", description="The user's language.")
    name: Text255 | None = Field(default=None, description="The user's name.")


class UserInvited(BaseModel):
    """The provider's InviteUserResponseSchema."""

    status: Literal["sent"] = Field(description="The invitation mail is queued.")
    user_id: int = Field(description="The invited user.")


class SetPassword(LenientBody):
    token: str = Field(
        max_length=100, description="The token of the set-password link (its `token` parameter)."
    )
    password: Password
