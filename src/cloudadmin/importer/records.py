"""One model per kind of record in an import document (docs/import.md).

Field names are the API's wire names; defaults are those docs/import.md lists.
Models are strict (a JSON string is not an integer, "true" is not a boolean) and
forbid unknown keys, so typos fail at their JSON pointer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from cloudadmin.billing.addendums import fields as addendum_fields
from cloudadmin.billing.addendums import schemas as billing
from cloudadmin.billing.catalogue import CURRENCIES, PRODUCTS
from cloudadmin.cloud.lifecycle_policies import schemas as policies
from cloudadmin.db.models.accounts import GROUPS
from cloudadmin.iam.clients import schemas as clients
from cloudadmin.iam.clients.query import ServiceStatusFilter
from cloudadmin.iam.clients.schemas import AccountStatus, AuthType, Lang
from cloudadmin.iam.reselling.branding import schemas as branding
from cloudadmin.iam.reselling.notifications.schemas import NotificationType
from cloudadmin.iam.users import schemas as users
from cloudadmin.importer.fields import (
    Email,
    Id,
    Int32,
    Timestamp,
    ValidEmail,
    api_literal,
)

# argon2 in its PHC string form, as hash_password() writes it.
PasswordHash = Annotated[str, Field(pattern=r"^\$argon2(id|i|d)\$", max_length=1024)]
# A Fernet token (SecretBox); whether it opens under this secret key is checked with
# the references (loader.check_sealed), where the key is known.
Sealed = Annotated[str, Field(min_length=1, max_length=8192, pattern=r"^[A-Za-z0-9_=-]+$")]

# Enumerated values are the API's own definitions (docs/import.md, "Validation decisions"):
# a load refuses what the API's schema does not allow. Where the API names its Literal,
# it is imported; where a model declares it inline, api_literal reads it off the field.
Service = clients.Product
ServiceStatusValue = ServiceStatusFilter  # the values the API lists (and filters on)
if TYPE_CHECKING:
    SignupProcess: TypeAlias = str
    ClientType: TypeAlias = str
    UserType: TypeAlias = str
    PolicyStatus: TypeAlias = str
    ScheduleType: TypeAlias = str
    AddendumStatus: TypeAlias = str
else:
    SignupProcess = api_literal(clients.Client.model_fields["signup_process"].annotation)
    ClientType = api_literal(clients.Client.model_fields["client_type"].annotation)
    UserType = api_literal(users.User.model_fields["user_type"].annotation)
    PolicyStatus = api_literal(policies.LifecyclePolicy.model_fields["status"].annotation)
    ScheduleType = api_literal(
        policies.CronSchedule.model_fields["type"].annotation,
        policies.IntervalSchedule.model_fields["type"].annotation,
    )
    AddendumStatus = api_literal(billing.Addendum.model_fields["status"].annotation)
Text255 = Annotated[str, Field(max_length=255)]
TimeoutMs = Annotated[int, Field(ge=0, le=86_400_000)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# --- accounts -------------------------------------------------------------------


class ServiceStatus(Record):
    status: ServiceStatusValue
    enabled: bool


class Feature(Record):
    feature_id: int
    name: str
    service: Service


class ClientRecord(Record):
    id: Id
    email: Email
    companyName: Annotated[str, Field(max_length=255)]
    name: Text255 | None = None
    status: AccountStatus = "active"
    capabilities: list[Service] = []
    serviceStatuses: dict[Service, ServiceStatus] = {}
    paidFeatures: dict[Service, list[Feature]] = {}
    freeFeatures: dict[Service, list[Feature]] = {}
    entryBaseDomain: Text255 | None = None
    deleted: bool = False
    bill_type: Annotated[str, Field(max_length=50)] = "postpaid"
    is_test: bool = False
    phone: Annotated[str, Field(max_length=50)] | None = None
    website: Text255 | None = None
    signup_process: SignupProcess | None = None
    custom_id: Text255 | None = None
    country_code: Annotated[str, Field(pattern=r"^[A-Za-z]{2}$")] | None = None
    seller: Id | None = None
    resellers: Id | None = None
    client_type: ClientType = "common"
    owner: Int32 | None = None
    created_at: Timestamp | None = None
    # Personal product availability ({"CDN": false}); kept as stored when absent.
    service_availability: dict[str, bool] | None = None
    # Derived by the service in responses; a response pasted in must still load.
    currentUser: Any = None
    has_active_admin: Any = None
    users: Any = None


class GroupObject(Record):
    id: int
    name: str | None = None


_GROUP_IDS_BY_NAME = {name: gid for gid, name in GROUPS.items()}


class UserRecord(Record):
    id: Id
    email: Email
    client: Id
    groups: list[int | str | GroupObject] = []
    name: Text255 | None = None
    lang: Lang = "en"
    phone: Annotated[str, Field(max_length=50)] | None = None
    company: Text255 | None = None
    deleted: bool = False
    activated: bool = True
    sso_auth: bool = False
    two_fa: bool = False
    auth_types: list[AuthType] = ["password"]
    user_type: UserType = "common"
    is_active: bool = True
    superuser: bool = False
    password: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    # The stored form (what `cloudadmin export` writes): taken as it is, not hashed again.
    password_hash: PasswordHash | None = None
    date_joined: Timestamp | None = None
    # Derived from the home account in responses; accepted so responses load.
    reseller: Any = None
    client_and_roles: Any = None

    @field_validator("groups")
    @classmethod
    def _known_groups(cls, value: list[int | str | GroupObject]) -> list[int | str | GroupObject]:
        for item in value:
            gid = item.id if isinstance(item, GroupObject) else item
            if isinstance(gid, int) and gid not in GROUPS:
                raise PydanticCustomError("group", "unknown group id {gid}", {"gid": gid})
            if isinstance(gid, str) and gid not in _GROUP_IDS_BY_NAME:
                raise PydanticCustomError("group", "unknown group name {name!r}", {"name": gid})
        return value

    @model_validator(mode="after")
    def _one_password_form(self) -> UserRecord:
        if self.password is not None and self.password_hash is not None:
            raise _at("password_hash", "give password or password_hash, not both")
        return self

    def group_ids(self) -> list[int]:
        ids: list[int] = []
        for item in self.groups:
            gid = item.id if isinstance(item, GroupObject) else item
            gid = _GROUP_IDS_BY_NAME[gid] if isinstance(gid, str) else gid
            if gid not in ids:
                ids.append(gid)
        return ids


class ApiKeyRecord(Record):
    id: Id
    user: Id
    key: Annotated[str, Field(min_length=3, max_length=512)] | None = None
    # The stored form (what `cloudadmin export` writes): sha256 of "<id>:<secret>".
    key_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    name: Text255 | None = None
    expires_at: Timestamp | None = None
    revoked: bool = False
    # Kept as stored when absent (keys issued through the API carry them).
    description: Text255 | None = None
    role: int | None = None
    created_at: Timestamp | None = None
    last_usage: Timestamp | None = None

    @model_validator(mode="after")
    def _key_names_its_id(self) -> ApiKeyRecord:
        if (self.key is None) == (self.key_hash is None):
            raise _at("key", "give key or key_hash (exactly one)")
        if self.key is not None:
            self.secret()  # raises at /key when malformed
        if self.role is not None and self.role not in GROUPS:
            raise _at("role", f"unknown group id {self.role}")
        return self

    def stored_hash(self) -> str:
        from cloudadmin.kit.crypto import hash_api_secret

        if self.key_hash is not None:
            return self.key_hash
        return hash_api_secret(self.id, self.secret())

    def secret(self) -> str:
        from cloudadmin.auth.apikey import parse_token

        parsed = parse_token(self.key or "")
        if parsed is None:
            raise _at("key", "must be <id>_<secret> (or the legacy <id>$<secret>)")
        if parsed.key_id != self.id:
            raise _at("key", f"the key's id {parsed.key_id} is not the record's id {self.id}")
        return parsed.secret


SellerEmail = Annotated[str, Field(max_length=150), ValidEmail]


class SellerRecord(Record):
    id: Id
    email: SellerEmail
    full_name: Annotated[str, Field(min_length=1, max_length=255)]
    reseller: Id
    phone: Annotated[str, Field(max_length=30)] | None = None
    company: Text255 | None = None
    date_joined: Timestamp | None = None
    activated: bool = False
    deleted: bool = False
    reseller_name: Any = None  # derived from the reseller account


# --- reselling ------------------------------------------------------------------


# The branding's settings objects are the API's (a load refuses what a PUT refuses), but
# strict and closed like every record, and with every field optional: a load keeps exactly
# the fields given (exclude_unset).


class Colors(branding.Colors):
    """The theme colours of a reseller's panel."""

    model_config = Record.model_config


class PublicSettings(branding.OptionalPublicSettings):
    """What a reseller's customers see: links, contacts, the sender address."""

    model_config = Record.model_config

    showApiDoc: bool | None = None  # noqa: N815
    showStatusPage: branding.StatusPageText | None = None  # noqa: N815
    showKnowledgeBase: bool | None = None  # noqa: N815
    showTickets: bool | None = None  # noqa: N815
    # As every address of a load: demo and test documents send from reserved test
    # domains (.test), which the API's check refuses.
    fromEmail: Email | None = None  # noqa: N815
    colors: Colors | None = None


class MailServer(branding.MailServerAccess):
    """The reseller's own SMTP server; its password is stored encrypted."""

    model_config = Record.model_config

    tls: bool | None = None


class PrivateSettings(Record):
    mailServer: MailServer | None = None


class BrandingRecord(Record):
    reseller: Id
    domain: branding.Domain = ""
    publicSettings: PublicSettings = PublicSettings()
    privateSettings: PrivateSettings = PrivateSettings()
    deleted: bool = False
    # The stored form of mailServer.password (what `cloudadmin export` writes):
    # encrypted under CLOUDADMIN_SECRET_KEY, stored as it is.
    mail_password_encrypted: Sealed | None = None

    @model_validator(mode="after")
    def _one_password_form(self) -> BrandingRecord:
        mail = self.privateSettings.mailServer
        if self.mail_password_encrypted is not None and mail and mail.password is not None:
            raise _at(
                "mail_password_encrypted",
                "give privateSettings.mailServer.password or this, not both",
            )
        return self


class NotificationSettingRecord(Record):
    id: Id
    reseller: Id
    notification_type: NotificationType
    email: Email
    enabled: bool = True


# --- billing --------------------------------------------------------------------


# The addendum's shape is the field table's (billing/addendums/fields.py); the checks
# below are what a shape cannot say.


def _id_matches_code(currency: Any) -> Any:
    if CURRENCIES.get(currency.id) != currency.char_code:
        raise _at("id", f"currency id {currency.id} is not {currency.char_code} (1 USD, 2 EUR)")
    return currency


def _known_product(product: Any) -> Any:
    if product.id not in PRODUCTS:
        raise _at("id", f"unknown product id {product.id}")
    expected = PRODUCTS[product.id]
    if expected != product.internal_name:
        given = product.internal_name
        raise _at("internal_name", f"product {product.id} is {expected}, not {given}")
    return product


def _client_is_client_id(addendum: Any) -> Any:
    client = addendum.client
    if client is not None and client.id != addendum.client_id:
        raise _at("client", f"client.id {client.id} is not client_id {addendum.client_id}")
    return addendum


# The checks of each object ("": the addendum itself).
_CHECKS = {"": _client_is_client_id, "currency": _id_matches_code, "product": _known_product}


def _record_field(field: addendum_fields.AddendumField) -> tuple[Any, Any]:
    """A field's type and default in a load record: a value the addendums table takes,
    never one the API would not write. What is not stored is accepted and kept nowhere."""
    if field.origin in (addendum_fields.JOINED, addendum_fields.COMPUTED):
        return str | None, None
    if field.kind in ("number", "nullable number"):
        low, high = field.bounds or (None, None)
        typed: Any = Annotated[int, Field(ge=low, le=high)] if field.bounds else int
    elif field.kind in ("instant", "nullable instant"):
        typed = Timestamp
    elif field.kind == "status":
        typed = AddendumStatus
    elif field.known is not None:
        typed = Literal[field.known]
    elif field.max_length is not None:
        typed = Annotated[str, Field(max_length=field.max_length)]
    else:
        typed = str
    return (typed | None, None) if addendum_fields.optional(field) else (typed, ...)


def _record_model(name: str, members: addendum_fields.Layout, key: str) -> Any:
    declared: dict[str, Any] = {}
    for member, node in members:
        if isinstance(node, addendum_fields.AddendumField):
            declared[member] = _record_field(node)
        else:
            model = _record_model(addendum_fields.GROUPS[member], node, member)
            declared[member] = (
                (model | None, None) if addendum_fields.optional(node) else (model, ...)
            )
    checks: dict[str, Any] = {}
    if key in _CHECKS:
        checks[_CHECKS[key].__name__] = model_validator(mode="after")(_CHECKS[key])
    return create_model(name, __base__=Record, __validators__=checks, **declared)


AddendumRecord = _record_model("AddendumRecord", addendum_fields.layout(addendum_fields.FIELDS), "")


class NestedError(ValueError):
    """A model-level check that knows which field is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _at(field: str, message: str) -> NestedError:
    return NestedError(field, message)
