"""Wire shapes of the Client (account) resource and of its PATCH body ."""

from __future__ import annotations

from copy import copy
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field, StringConstraints, create_model

from cloudadmin.kit.ints import Id32
from cloudadmin.kit.omit import Omittable, PartialUpdate, omitted

AccountStatus = Literal[
    "new", "trial", "trialend", "active", "integration", "paused", "preparation", "ready"
]
Product = Literal["CDN", "STORAGE", "STREAMING", "DNS", "DDOS", "CLOUD"]
Lang = Literal["de", "en", "ru", "zh", "az"]
AuthType = Literal["password", "sso", "github", "google-oauth2"]

Email = Annotated[EmailStr, Field(max_length=254)]
CompanyName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
Text255 = Annotated[str, StringConstraints(max_length=255)]
PhoneText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=50)]
AccountId = Id32


class GroupOut(BaseModel):
    id: int
    name: str


class ServiceStatus(BaseModel):
    status: str = Field(description="new, trial, trialend, active, paused, activating or deleted.")
    enabled: bool = Field(description="true: the service is available in the control panel.")


class ServiceStatuses(BaseModel):
    CDN: ServiceStatus
    CLOUD: ServiceStatus
    DDOS: ServiceStatus
    DNS: ServiceStatus
    STORAGE: ServiceStatus
    STREAMING: ServiceStatus


class Feature(BaseModel):
    model_config = ConfigDict(extra="allow")

    feature_id: int
    name: str
    service: str


class EmbeddedUser(BaseModel):
    """A user as embedded in a Client: the User fields id through auth_types."""

    id: int
    email: str
    name: str | None
    lang: Lang
    phone: str | None
    company: str
    reseller: int = Field(description="Services provider (reseller account) ID.")
    client: int = Field(description="Account ID of the user.")
    deleted: bool
    groups: list[GroupOut]
    activated: bool
    sso_auth: bool
    two_fa: bool
    auth_types: list[AuthType]


class Client(BaseModel):
    id: int
    email: str
    name: str | None
    status: AccountStatus
    companyName: str  # noqa: N815
    currentUser: int  # noqa: N815
    capabilities: list[Product]
    serviceStatuses: ServiceStatuses  # noqa: N815
    paidFeatures: dict[str, list[Feature]]  # noqa: N815
    freeFeatures: dict[str, list[Feature]]  # noqa: N815
    entryBaseDomain: str | None  # noqa: N815
    deleted: bool
    bill_type: str
    is_test: bool
    has_active_admin: bool
    users: list[EmbeddedUser]
    phone: str | None
    website: str | None = omitted()
    signup_process: Literal["sign_up_full", "sign_up_simple"] | None
    custom_id: str | None
    country_code: str | None = omitted()
    seller: int | None
    resellers: int | None = omitted("Reseller ID (absent for a top-level account).")
    client_type: Literal["common", "reseller", "sales"]
    owner: int | None = omitted("ID of the user who created the client (absent when unknown).")


class ClientPatch(PartialUpdate):
    """Every field optional; an absent field is left untouched. Only `custom_id`, `name`,
    `phone` and `seller` take null. Read-only Client fields sent along are ignored."""

    email: Omittable[Email] = None
    companyName: Omittable[CompanyName] = None  # noqa: N815
    custom_id: Text255 | None = None
    name: Text255 | None = None
    phone: PhoneText | None = None
    reseller: Omittable[AccountId] = Field(
        default=None, description="Operator or reseller only: the reseller account."
    )
    seller: AccountId | None = Field(
        default=None, description="Operator or reseller only: one of the reseller's sellers."
    )
    is_test: Omittable[bool] = Field(default=None, description="Operator or reseller only.")


# What only the account's reseller and operators see: the provider's Client is its
# ClientBase and these fields.
RESELLER_VIEW_ONLY = ("seller", "resellers", "client_type", "owner")

# An account as its own users see it (GET /iam/clients/me, the provider's ClientBase):
# Client's fields, as Client declares them, but those.
_BASE_FIELDS: dict[str, Any] = {
    name: (field.annotation, copy(field))
    for name, field in Client.model_fields.items()
    if name not in RESELLER_VIEW_ONLY
}
ClientBase: type[BaseModel] = create_model(
    "ClientBase",
    __doc__="An account as its own users see it: the Client without who sells it.",
    **_BASE_FIELDS,
)
