"""GET/PUT /iam/reselling/settings (7), POST .../upload (8), and the stored files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Request, UploadFile
from fastapi.responses import FileResponse

from cloudadmin.errors import NotFound
from cloudadmin.iam.reselling.branding import blobs, images, service, serving
from cloudadmin.iam.reselling.branding.schemas import BrandingSettings, BrandingWrite
from cloudadmin.web.app_state import app_state
from cloudadmin.web.deps import AppDestinations, CurrentActor, CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Branding"])

FILE_ROUTE = "get_branding_file"


def _directory(request: Request) -> Path:
    return blobs.blob_dir(app_state(request.app).settings)


def _url_for(request: Request) -> service.UrlFor:
    return lambda name: str(request.url_for(FILE_ROUTE, name=name))


@router.get("/iam/reselling/settings", summary="Read branding settings")
async def get_branding_settings(
    request: Request, session: Session, caller: CurrentCaller
) -> BrandingSettings:
    """The caller's reseller account's settings; defaults when none were saved. The
    mail-server password is never returned, only a fixed mask."""
    return await service.get(session, caller, _url_for(request))


@router.put("/iam/reselling/settings", summary="Replace branding settings")
async def replace_branding_settings(
    request: Request,
    body: BrandingWrite,
    session: Session,
    actor: CurrentActor,
    to: AppDestinations,
) -> BrandingSettings:
    return await service.replace(session, actor, body, to, _url_for(request))


async def _read(part: str, upload: UploadFile | None) -> bytes | None:
    if upload is None:
        return None
    limit = images.LOGO_MAX_BYTES if part == "logo" else images.FAVICON_MAX_BYTES
    data = await upload.read(limit + 1)
    images.check_size(part, len(data))
    return data


@router.post("/iam/reselling/settings/upload", summary="Upload logo and favicon")
async def upload_branding_files(
    request: Request,
    session: Session,
    actor: CurrentActor,
    logo: Annotated[UploadFile | None, File(description="PNG, JPEG or SVG, < 4 MB.")] = None,
    favicon: Annotated[UploadFile | None, File(description="ICO or PNG, < 1 MB.")] = None,
) -> BrandingSettings:
    """multipart/form-data with a `logo` part (PNG, JPEG or self-contained SVG, smaller than
    4 MB), a `favicon` part (ICO or PNG, smaller than 1 MB), or both. Files are checked by
    their content; their URLs appear as `publicSettings.logo` and `publicSettings.favicon`."""
    files = {
        part: data
        for part, data in (
            ("logo", await _read("logo", logo)),
            ("favicon", await _read("favicon", favicon)),
        )
        if data is not None
    }
    return await service.upload(
        session,
        actor,
        files,
        _directory(request),
        _url_for(request),
        app_state(request.app).settings.max_image_pixels,
    )


@router.get(
    "/iam/reselling/files/{name}",
    name=FILE_ROUTE,
    summary="An uploaded logo or favicon",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"image/png": {}, "image/jpeg": {}, "image/svg+xml": {}, "image/x-icon": {}}
        }
    },
)
async def get_branding_file(request: Request, name: str) -> FileResponse:
    """Public (the control panel shows it before sign-in): names are the SHA-256 of the
    content, served as immutable. An SVG is sent as a download (`Content-Disposition:
    attachment`) unless requested as an image (`Sec-Fetch-Dest: image`, or an `Accept`
    preferring `image/svg+xml` to `text/html`)."""
    path = blobs.path_of(_directory(request), name)
    if path is None:
        raise NotFound("File not found.")
    media_type = blobs.MEDIA_TYPES[name.rsplit(".", 1)[1]]
    headers = serving.file_headers(name, media_type, request.headers)
    return FileResponse(path, media_type=media_type, headers=headers)
