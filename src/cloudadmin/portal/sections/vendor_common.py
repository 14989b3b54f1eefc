"""What the vendor settings' pages share (docs/portal.md, "Vendor settings"): who may
open them, the branding settings as the API's service reads and replaces them, and the
form's field names for the API's nested ones.

Branding and the mail server are one resource in the API (``PUT
/iam/reselling/settings`` replaces both); the portal shows them on two pages, and each
page's form sends the other half back as it is stored (the mail password left out, so
the stored one is kept).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends
from pydantic import ValidationError as PydanticValidationError

from cloudadmin.errors import ApiError, ValidationError
from cloudadmin.iam.reselling.branding import service
from cloudadmin.iam.reselling.branding.endpoints import FILE_ROUTE
from cloudadmin.iam.reselling.branding.schemas import BrandingSettings, BrandingWrite
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.kit.outbound import Destinations
from cloudadmin.portal.context import PREFIX, Portal, only
from cloudadmin.portal.forms import FORM, Form
from cloudadmin.web.app_state import app_state

BASE = f"{PREFIX}/vendor"
# An operator manages a reseller's notification settings (any reseller's), and its
# branding only when its home account is a reseller (docs/iam.md, "Who may call what");
# a seller's user gets the 404 page.
VendorPage = Annotated[Portal, Depends(only(PortalKind.operator, PortalKind.reseller))]

PUBLIC_TEXTS = (
    "brandName",
    "websiteLink",
    "supportEmail",
    "supportPhone",
    "agreementLink",
    "entryBaseDomain",
)
FLAGS = ("showApiDoc", "showStatusPage", "showKnowledgeBase", "showTickets")
COLOURS = ("header", "headerText", "primary")
MAIL_TEXTS = ("host", "port", "login")
# Every field of both forms, by its name in the API's body (the last part of its path).
BRANDING_FIELDS = frozenset({"domain", *PUBLIC_TEXTS, *FLAGS, *COLOURS})
MAIL_FIELDS = frozenset({"fromEmail", "password", "tls", *MAIL_TEXTS})
FIELDS = BRANDING_FIELDS | MAIL_FIELDS | {"logo", "favicon"}


def url_for(portal: Portal) -> service.UrlFor:
    request = portal.request
    return lambda name: str(request.url_for(FILE_ROUTE, name=name))


def destinations(portal: Portal) -> Destinations:
    state = app_state(portal.request.app)
    return Destinations(outbound=state.outbound, box=state.secret_box)


async def current(portal: Portal) -> BrandingSettings:
    """The settings as the API's GET answers them (403 for a caller whose account is
    not a reseller)."""
    return await service.get(portal.db, portal.caller, url_for(portal))


def field_name(path: Any) -> str:
    """A form field for a place in the API's body: a pydantic ``loc`` or a service's
    dotted field (``privateSettings.mailServer.host`` is ``host``)."""
    parts = path.split(".") if isinstance(path, str) else [str(p) for p in path]
    for part in reversed(parts):
        if part in FIELDS:
            return part
    return FORM


def refuse(form: Form, error: ApiError, shown: frozenset[str]) -> None:
    """A service's refusal as the form's field messages; a message on a field the form
    does not show (the other page's half, sent back as stored) is the form's."""
    if not error.fields:
        form.errors.setdefault(FORM, error.message)
        return
    for name, messages in error.fields.items():
        field = field_name(name)
        text = " ".join(messages)
        if field not in shown:
            field, text = FORM, f"{name}: {text}"
        form.errors.setdefault(field, text)


def validated(body: dict[str, Any], form: Form, shown: frozenset[str]) -> BrandingWrite | None:
    """``body`` as the API's PUT body, or None with the field messages set."""
    if form.errors:
        return None
    try:
        return BrandingWrite.model_validate(body)
    except PydanticValidationError as invalid:
        fields: dict[str, list[str]] = {}
        for error in invalid.errors():
            message = str(error.get("msg", "Invalid value.")).removeprefix("Value error, ")
            place = ".".join(str(part) for part in error.get("loc", ()))
            fields.setdefault(place, []).append(message)
        refuse(form, ValidationError(fields=fields), shown)
        return None


def public_as_stored(settings: BrandingSettings) -> dict[str, Any]:
    """The public settings as a PUT would send them back unchanged."""
    return settings.publicSettings.model_dump(
        mode="json", exclude={"logo", "favicon"}, exclude_none=True
    )


def mail_as_stored(settings: BrandingSettings) -> dict[str, Any] | None:
    """The mail server as a PUT would send it back unchanged: its password left out (the
    stored one is kept); None when none is stored."""
    mail = settings.privateSettings.mailServer
    if not (mail.host or mail.port or mail.login or mail.tls or mail.password):
        return None
    return {"tls": mail.tls, "host": mail.host, "port": mail.port, "login": mail.login}


def text_or_none(form: Form, name: str) -> str | None:
    value = form.get(name).strip()
    return value or None
