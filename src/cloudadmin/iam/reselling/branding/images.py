"""Logo and favicon checks: by content, never by name or declared type."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image

from cloudadmin.errors import PayloadTooLarge, ValidationError
from cloudadmin.iam.reselling.branding import headers, svg

MIB = 1024 * 1024
LOGO_MAX_BYTES = 4 * MIB  # a logo must be smaller
FAVICON_MAX_BYTES = 1 * MIB  # a favicon must be smaller

_EXT = {
    "PNG": ("png", "image/png"),
    "JPEG": ("jpg", "image/jpeg"),
    "ICO": ("ico", "image/x-icon"),
    "SVG": ("svg", "image/svg+xml"),
}


@dataclass(frozen=True, slots=True)
class CheckedImage:
    data: bytes
    kind: str  # PNG, JPEG, SVG or ICO
    extension: str
    media_type: str


def check_size(part: str, size: int) -> None:
    limit = LOGO_MAX_BYTES if part == "logo" else FAVICON_MAX_BYTES
    if size >= limit:
        raise PayloadTooLarge(f"{part}: the file must be smaller than {limit // MIB} MB.")


def limit_pillow(max_pixels: int) -> None:
    """Pillow's own bomb check, process-wide, at the same cap (it warns above the cap and
    raises DecompressionBombError above twice it; both are refused here)."""
    Image.MAX_IMAGE_PIXELS = max_pixels


def _check_dimensions(part: str, sizes: list[tuple[int, int]], max_pixels: int) -> None:
    for width, height in sizes:
        if width < 1 or height < 1:
            raise ValidationError.field(part, "The image dimensions are not accepted.")
        if width * height > max_pixels:
            raise _too_many_pixels(part, width, height, max_pixels)


def _too_many_pixels(
    part: str, width: int | None, height: int | None, max_pixels: int
) -> ValidationError:
    declared = f" ({width}x{height})" if width is not None else ""
    return ValidationError.field(
        part,
        f"The image is too large{declared}: at most {max_pixels} pixels "
        "(width x height) are accepted.",
    )


def _raster(
    part: str, data: bytes, formats: tuple[str, ...], max_pixels: int
) -> CheckedImage | None:
    # Every frame's declared size is checked from its header before Pillow sees the file:
    # Pillow decodes an ICO's largest frame while opening it.
    try:
        declared = headers.declared_sizes(data, formats)
    except headers.Malformed:
        return None
    if declared is not None:
        _check_dimensions(part, declared, max_pixels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(formats)) as image:
                kind = image.format or ""
                # JPEG's size comes from its markers; nothing is decoded yet.
                _check_dimensions(part, [image.size], max_pixels)
                image.load()  # decodes: a truncated or corrupted file fails here
    except ValidationError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise _too_many_pixels(part, None, None, max_pixels) from exc
    except (OSError, ValueError, SyntaxError):
        return None
    if kind not in formats:
        return None
    ext, media = _EXT[kind]
    return CheckedImage(data, kind, ext, media)


def _svg(part: str, data: bytes) -> CheckedImage | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    head = text.lstrip()[:4096].lower()
    if not (
        head.startswith("<?xml")
        or head.startswith("<svg")
        or head.startswith("<!--")
        or head.startswith("<!doctype")
    ):
        return None
    try:
        root = svg.parse(text)
    except svg.Refused as refused:
        raise ValidationError.field(
            part,
            f"SVG images that hold {refused} are not accepted: no scripts, "
            "no event attributes, no references outside the document.",
        ) from refused
    if root is None:
        return None
    return CheckedImage(data, "SVG", *_EXT["SVG"])


def check_logo(data: bytes, max_pixels: int) -> CheckedImage:
    check_size("logo", len(data))
    found = _raster("logo", data, ("PNG", "JPEG"), max_pixels) or _svg("logo", data)
    if found is None:
        raise ValidationError.field(
            "logo",
            "Upload a valid image: PNG, JPEG or SVG. The file you uploaded was either "
            "not an image or a corrupted image.",
        )
    return found


def check_favicon(data: bytes, max_pixels: int) -> CheckedImage:
    check_size("favicon", len(data))
    found = _raster("favicon", data, ("ICO", "PNG"), max_pixels)
    if found is None:
        raise ValidationError.field(
            "favicon",
            "Upload a valid image: ICO or PNG. The file you uploaded was either "
            "not an image or a corrupted image.",
        )
    return found
