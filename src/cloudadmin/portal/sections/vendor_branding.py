"""Vendor settings, branding: every public setting of ``GET/PUT
/iam/reselling/settings``, the logo and favicon upload of ``POST
/iam/reselling/settings/upload`` (the same checks: iam/reselling/branding/images.py,
svg.py), and the header's live preview (vendor_preview.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.errors import ApiError, PermissionDenied
from cloudadmin.iam.reselling.branding import blobs, images, service
from cloudadmin.iam.reselling.branding.schemas import BrandingSettings
from cloudadmin.portal.context import Portal, PortalRoute, see_other
from cloudadmin.portal.forms import Form, read_form, refusals_to
from cloudadmin.portal.pages import fragment
from cloudadmin.portal.sections.vendor_common import (
    BASE,
    BRANDING_FIELDS,
    COLOURS,
    FLAGS,
    PUBLIC_TEXTS,
    VendorPage,
    current,
    mail_as_stored,
    refuse,
    text_or_none,
    url_for,
)
from cloudadmin.portal.sections.vendor_preview import preview_of, svg_values
from cloudadmin.portal.sections.vendor_saving import save
from cloudadmin.web.app_state import app_state

router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)

TITLE = "Vendor settings"
UPLOAD_PARTS = ("logo", "favicon")


def values_of(settings: BrandingSettings) -> dict[str, str]:
    """The branding form's values as stored."""
    public = settings.publicSettings
    values = {"domain": settings.domain}
    for name in PUBLIC_TEXTS:
        values[name] = getattr(public, name) or ""
    for name in FLAGS:
        stored = getattr(public, name)
        values[name] = "true" if stored is True or stored == "true" else ""
    colours = public.colors
    for name in COLOURS:
        values[name] = getattr(colours, name) or ""
    return values


def branding_page(
    portal: Portal,
    settings: BrandingSettings,
    *,
    form: Form | None = None,
    upload: Form | None = None,
    saved: str = "",
    status: int = 200,
) -> Response:
    if form is None:
        form = Form(values=values_of(settings))
    public = settings.publicSettings
    preview = preview_of(form.values, public.logo, public.favicon)
    return portal.page(
        TITLE,
        "vendor/branding.html",
        status=status,
        form=form,
        upload=upload or Form(),
        settings=settings,
        preview=fragment("vendor/preview.html", preview=preview),
        saved=saved,
        tab="branding",
    )


@router.get("")
async def vendor_index(portal: VendorPage, saved: str = "") -> Response:
    try:
        settings = await current(portal)
    except PermissionDenied:
        # An operator whose home account is not a reseller has no branding of its own;
        # it may open any reseller's notification settings.
        return portal.page(TITLE, "vendor/not_reseller.html", tab="branding")
    return branding_page(portal, settings, saved=saved)


def _body(form: Form, settings: BrandingSettings) -> dict[str, Any]:
    """The PUT body: the typed public settings, the stored sender and mail server."""
    public: dict[str, Any] = {name: text_or_none(form, name) for name in PUBLIC_TEXTS}
    for name in FLAGS:
        public[name] = form.checked(name)
    public["showStatusPage"] = "true" if form.checked("showStatusPage") else "false"
    public["fromEmail"] = settings.publicSettings.fromEmail
    public["colors"] = {name: text_or_none(form, name) for name in COLOURS}
    return {
        "domain": form.get("domain").strip(),
        "publicSettings": public,
        "privateSettings": {"mailServer": mail_as_stored(settings)},
    }


@router.post("")
async def save_branding(portal: VendorPage) -> Response:
    form = await read_form(portal.request)
    settings = await current(portal)
    await save(portal, form, _body(form, settings), BRANDING_FIELDS)
    if not form.ok:
        return branding_page(portal, settings, form=form, status=400)
    return see_other(f"{BASE}?saved=branding")


async def _read_part(form: Form, part: str) -> bytes | None:
    """An uploaded part's bytes, at most one byte over its limit (as the API reads it);
    a larger file is the part's message."""
    upload = form.files.get(part)
    if upload is None:
        return None
    limit = images.LOGO_MAX_BYTES if part == "logo" else images.FAVICON_MAX_BYTES
    data = await upload.read(limit + 1)
    try:
        images.check_size(part, len(data))
    except ApiError as error:
        message = error.message.removeprefix(f"{part}: ")
        form.errors[part] = message[:1].upper() + message[1:]
        return None
    return data


@router.post("/upload")
async def upload_branding_images(portal: VendorPage) -> Response:
    upload = await read_form(portal.request)
    files = {part: data for part in UPLOAD_PARTS if (data := await _read_part(upload, part))}
    too_large = bool(upload.errors)
    if upload.ok:
        with refusals_to(upload, lambda error: refuse(upload, error, frozenset(UPLOAD_PARTS))):
            await service.upload(
                portal.db,
                portal.actor,
                files,
                blobs.blob_dir(app_state(portal.request.app).settings),
                url_for(portal),
                app_state(portal.request.app).settings.max_image_pixels,
            )
    if not upload.ok:
        # As the API: a file over its size limit is a 413, any other refusal a 400.
        status = 413 if too_large else 400
        return branding_page(portal, await current(portal), upload=upload, status=status)
    return see_other(f"{BASE}?saved=images")


@router.get("/preview")
async def vendor_preview(portal: VendorPage) -> Response:
    """The preview of the typed colours and brand name (htmx swaps it in)."""
    public = (await current(portal)).publicSettings
    preview = preview_of(portal.request.query_params, public.logo, public.favicon)
    return portal.page_or_part(
        TITLE, "vendor/preview_page.html", "vendor/preview.html", preview=preview, tab="branding"
    )


@router.get("/preview.svg")
async def vendor_preview_image(portal: VendorPage) -> Response:
    svg = fragment("vendor/header.svg", **svg_values(portal.request.query_params))
    return Response(svg, media_type="image/svg+xml")
