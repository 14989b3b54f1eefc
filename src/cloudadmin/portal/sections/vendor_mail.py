"""Vendor settings, the mail server (SMTP provider): the branding's ``mailServer`` and the
sender address (``publicSettings.fromEmail``), saved by the API's service, and "Send a
test mail" through the saved server (iam/reselling/branding/test_mail.py).

The password is never rendered: a stored one is shown as the API's mask, and the mask
posted back keeps it (the API's rule); an emptied field removes it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.errors import ApiError
from cloudadmin.events.mail import MailSender
from cloudadmin.iam.reselling.branding import test_mail
from cloudadmin.iam.reselling.branding.schemas import MAIL_PASSWORD_MASK, BrandingSettings
from cloudadmin.portal.context import Portal, PortalRoute, see_other
from cloudadmin.portal.forms import Form, read_form
from cloudadmin.portal.sections import vendor_common as vendor
from cloudadmin.portal.sections.vendor_saving import save
from cloudadmin.web.app_state import app_state

router = APIRouter(prefix=vendor.BASE, route_class=PortalRoute, include_in_schema=False)

TITLE = "Vendor settings: mail server"
# A new password typed into a form that was refused is not shown again.
RETYPE = "The new password was not kept: type it again, or leave the field as it is."


def values_of(settings: BrandingSettings) -> dict[str, str]:
    mail = settings.privateSettings.mailServer
    values = {name: getattr(mail, name) or "" for name in vendor.MAIL_TEXTS}
    values["tls"] = "true" if mail.tls else ""
    values["fromEmail"] = settings.publicSettings.fromEmail or ""
    return values


def mail_page(
    portal: Portal,
    settings: BrandingSettings,
    *,
    form: Form | None = None,
    saved: bool = False,
    result: test_mail.TestMailResult | None = None,
    test_error: str | None = None,
    status: int = 200,
) -> Response:
    stored_password = settings.privateSettings.mailServer.password is not None
    if form is None:
        form = Form(values=values_of(settings))
    return portal.page(
        TITLE,
        "vendor/mail.html",
        status=status,
        form=form,
        password=MAIL_PASSWORD_MASK if stored_password else "",
        has_server=bool(settings.privateSettings.mailServer.host),
        saved=saved,
        result=result,
        test_error=test_error,
        tab="mail",
    )


@router.get("/mail")
async def vendor_mail(portal: vendor.VendorPage, saved: str = "") -> Response:
    return mail_page(portal, await vendor.current(portal), saved=saved == "mail")


def _mail_server(form: Form) -> dict[str, Any] | None:
    """The typed mail server; None (no mail server) when every field is empty."""
    password = form.get("password")
    server: dict[str, Any] = {name: vendor.text_or_none(form, name) for name in vendor.MAIL_TEXTS}
    server["tls"] = form.checked("tls")
    if not any(server.values()) and password in ("", MAIL_PASSWORD_MASK):
        return None
    # The mask keeps the stored password, "" removes it, anything else replaces it.
    server["password"] = password
    return server


@router.post("/mail")
async def save_mail_server(portal: vendor.VendorPage) -> Response:
    form = await read_form(portal.request)
    settings = await vendor.current(portal)
    public = vendor.public_as_stored(settings)
    public["fromEmail"] = vendor.text_or_none(form, "fromEmail")
    body = {
        "domain": settings.domain,
        "publicSettings": public,
        "privateSettings": {"mailServer": _mail_server(form)},
    }
    await save(portal, form, body, vendor.MAIL_FIELDS)
    if not form.ok:
        if form.get("password") not in ("", MAIL_PASSWORD_MASK):
            form.errors.setdefault("password", RETYPE)
        return mail_page(portal, settings, form=form, status=400)
    return see_other(f"{vendor.BASE}/mail?saved=mail")


@router.post("/mail/test")
async def send_test_mail(portal: vendor.VendorPage) -> Response:
    """Sends a test mail to the signed-in user through the saved mail server: 200 when
    the server took it, 502 with the failure's class when not."""
    settings = await vendor.current(portal)  # 403 for an account that is not a reseller
    # No transaction may stay open (on SQLite: the write lock) while the mail server
    # is talked to; the activity-log row opens a new one afterwards.
    await portal.db.commit()
    state = app_state(portal.request.app)
    try:
        result = await test_mail.send_test_mail(
            state.read_sessionmaker,
            portal.caller,
            MailSender(state.secret_box, state.outbound),
            portal.user.email,
        )
    except ApiError as error:
        if error.status_code != 400:
            raise
        return mail_page(portal, settings, test_error=error.message, status=400)
    return mail_page(portal, settings, result=result, status=200 if result.sent else 502)
