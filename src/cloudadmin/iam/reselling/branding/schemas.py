"""Wire shapes of a reseller's branding settings (operations 7, 8 and the PUT)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    EmailStr,
    Field,
    StringConstraints,
)

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.omit import omitted
from cloudadmin.kit.outbound import literal_address

MAIL_PASSWORD_MASK = "********"

Short = Annotated[str, StringConstraints(max_length=255)]
Link = Annotated[str, StringConstraints(max_length=2048, pattern=r"^(https?://\S+)?$")]
Color = Annotated[str, StringConstraints(max_length=32)]
_HOSTNAME = re.compile(
    r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+)?$"
)


def _hostname(value: str) -> str:
    value = value.strip().lower()
    if len(value) > 253 or not _HOSTNAME.match(value):
        raise ValueError("Enter a valid domain name, e.g. mycompany.com.")
    return value


Domain = Annotated[str, AfterValidator(_hostname)]

# One RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters.
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", re.IGNORECASE)


def _mail_host(value: str) -> str:
    """A host name (RFC 1123 labels; an internationalised name as IDNA spells it, the
    way the resolver will encode it when connecting) or an address literal (IPv6 with or
    without brackets). Nothing else: a user (``u@host``), a port (``host:25``, the port
    is its own field), a scheme or a space would be taken for part of the name and
    fail only when the mail is sent. Whether the address may be reached is the outbound
    policy's question, asked by the service when saving and again when connecting."""
    if not value or (value == value.strip() and literal_address(value) is not None):
        return value
    try:
        ascii_name = value.encode("idna").decode("ascii")
    except UnicodeError:
        ascii_name = ""
    labels = ascii_name.removesuffix(".").split(".")
    if len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(
            "Enter a host name or an IP address, without a user, port or scheme "
            "(the port is its own field), e.g. smtp.example.com."
        )
    return value


MailHost = Annotated[str, StringConstraints(max_length=255), AfterValidator(_mail_host)]


def _text_of_bool(value: Any) -> Any:
    """showStatusPage is a string on the wire; a JSON boolean is taken as its text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _port_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _check_port(value: str | None) -> str | None:
    if value and not (value.isdigit() and 1 <= int(value) <= 65535):
        raise ValueError("Enter a port number from 1 to 65535.")
    return value


StatusPageText = Annotated[str, BeforeValidator(_text_of_bool), StringConstraints(max_length=255)]
Port = Annotated[
    str,
    BeforeValidator(_port_text),
    StringConstraints(max_length=5, pattern=r"^\d*$"),
    AfterValidator(_check_port),
]


class Colors(LenientBody):
    header: Color | None = None
    primary: Color | None = None
    headerText: Color | None = None  # noqa: N815


class OptionalPublicSettings(LenientBody):
    """The public settings that may be left out (the importer's record shares them)."""

    brandName: Short | None = None  # noqa: N815
    fromEmail: EmailStr | None = None  # noqa: N815
    websiteLink: Link | None = None  # noqa: N815
    supportEmail: Short | None = None  # noqa: N815
    supportPhone: Short | None = None  # noqa: N815
    agreementLink: Link | None = None  # noqa: N815
    entryBaseDomain: Domain | None = None  # noqa: N815


class PublicSettingsWrite(OptionalPublicSettings):
    showApiDoc: bool  # noqa: N815
    showStatusPage: StatusPageText  # noqa: N815
    showKnowledgeBase: bool  # noqa: N815
    showTickets: bool  # noqa: N815
    colors: Colors = Field(default_factory=Colors)


class ColorsOut(BaseModel):
    """In an answer, an unset colour is left out (the provider types each as a string)."""

    header: str | None = omitted()
    primary: str | None = omitted()
    headerText: str | None = omitted()  # noqa: N815


class PublicSettings(BaseModel):
    """In an answer, an unset optional string is left out (the provider types it as a
    string, not nullable)."""

    showApiDoc: bool  # noqa: N815
    showStatusPage: str  # noqa: N815
    showKnowledgeBase: bool  # noqa: N815
    showTickets: bool  # noqa: N815
    brandName: str | None = omitted()  # noqa: N815
    fromEmail: str | None = omitted()  # noqa: N815
    websiteLink: str | None = omitted()  # noqa: N815
    supportEmail: str | None = omitted()  # noqa: N815
    supportPhone: str | None = omitted()  # noqa: N815
    agreementLink: str | None = omitted()  # noqa: N815
    entryBaseDomain: str | None = omitted()  # noqa: N815
    colors: ColorsOut = Field(default_factory=ColorsOut)
    logo: str | None = omitted("URL of the uploaded logo (served by this service).")
    favicon: str | None = omitted("URL of the uploaded favicon (served by this service).")


class MailServerAccess(LenientBody):
    """Where and as whom the service reaches a reseller's mail server (the importer's
    record shares it)."""

    host: MailHost | None = Field(
        default=None,
        description="A host name or an IP address (no user, port or scheme). Loopback, "
        "private, link-local, CGNAT and metadata addresses are "
        "refused (400) unless CLOUDADMIN_OUTBOUND_ALLOW lists them.",
    )
    port: Port | None = None
    login: Short | None = None
    password: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        default=None,
        description=f"Absent or `{MAIL_PASSWORD_MASK}`: keep the stored password; "
        "null or empty: remove it; any other value: the new password (stored encrypted).",
        json_schema_extra={"format": "password"},
    )


class MailServerWrite(MailServerAccess):
    tls: bool = False


class MailServer(BaseModel):
    tls: bool
    host: str | None = omitted()
    port: str | None = omitted()
    login: str | None = omitted()
    password: str | None = omitted(
        f"`{MAIL_PASSWORD_MASK}` when a password is stored (never the password itself), "
        "absent when none is."
    )


class PrivateSettingsWrite(LenientBody):
    mailServer: MailServerWrite | None = None  # noqa: N815


class PrivateSettings(BaseModel):
    mailServer: MailServer  # noqa: N815


class BrandingWrite(LenientBody):
    """PUT body: replaces the settings. `reseller` and `deleted` are read-only (ignored)."""

    domain: Domain = Field(description="Base control panel domain; may be empty.")
    publicSettings: PublicSettingsWrite  # noqa: N815
    privateSettings: PrivateSettingsWrite = Field(  # noqa: N815
        default_factory=PrivateSettingsWrite
    )


class BrandingSettings(BaseModel):
    domain: str
    publicSettings: PublicSettings  # noqa: N815
    privateSettings: PrivateSettings  # noqa: N815
    reseller: int
    deleted: bool
