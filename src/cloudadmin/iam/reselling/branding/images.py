"""Logo and favicon checks: by content, never by name or declared type."""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from xml.etree import ElementTree

from PIL import Image

from cloudadmin.errors import PayloadTooLarge, ValidationError

MIB = 1024 * 1024
LOGO_MAX_BYTES = 4 * MIB  # a logo must be smaller
FAVICON_MAX_BYTES = 1 * MIB  # a favicon must be smaller
MAX_PIXELS = 40_000_000

_EXT = {"PNG": ("png", "image/png"), "JPEG": ("jpg", "image/jpeg"),
        "ICO": ("ico", "image/x-icon"), "SVG": ("svg", "image/svg+xml")}
_ACTIVE_ELEMENTS = {"script", "foreignobject", "iframe", "embed", "object", "handler",
                    "listener"}
_SCRIPT_URL = re.compile(r"^\s*(javascript|vbscript|data\s*:\s*text/html)\s*:?", re.I)
_SCRIPT_CSS = re.compile(r"javascript:|expression\s*\(|@import|behaviou?r\s*:", re.I)


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


def _raster(part: str, data: bytes, formats: tuple[str, ...]) -> CheckedImage | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(formats)) as image:
                kind = image.format or ""
                width, height = image.size
                if width < 1 or height < 1 or width * height > MAX_PIXELS:
                    raise ValidationError.field(part, "The image dimensions are not accepted.")
                image.load()  # decodes: a truncated or corrupted file fails here
    except ValidationError:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError,
            Image.DecompressionBombWarning):
        return None
    if kind not in formats:
        return None
    ext, media = _EXT[kind]
    return CheckedImage(data, kind, ext, media)


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()


def _svg(part: str, data: bytes) -> CheckedImage | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    head = text.lstrip()[:4096].lower()
    if not (head.startswith("<?xml") or head.startswith("<svg") or head.startswith("<!--")
            or head.startswith("<!doctype")):
        return None
    lowered = text.lower()
    if "<!doctype" in lowered or "<!entity" in lowered:
        # No DTDs: entity expansion and external entities are never parsed.
        raise ValidationError.field(part, "SVG files with a DOCTYPE or entities are not "
                                    "accepted.")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None
    if _local(root.tag) != "svg":
        return None
    if "<?xml-stylesheet" in lowered or _holds_scripts(root):
        raise ValidationError.field(part, "SVG images that hold scripts are not accepted.")
    return CheckedImage(data, "SVG", *_EXT["SVG"])


def _holds_scripts(root: ElementTree.Element) -> bool:
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        name = _local(element.tag)
        if name in _ACTIVE_ELEMENTS:
            return True
        if name == "style" and _SCRIPT_CSS.search(element.text or ""):
            return True
        for attr, value in element.attrib.items():
            attr_name = _local(attr)
            if attr_name.startswith("on"):
                return True
            if attr_name in {"href", "src", "action", "formaction", "values", "to", "from"} \
                    and _SCRIPT_URL.match(value):
                return True
            if attr_name == "style" and _SCRIPT_CSS.search(value):
                return True
    return False


def check_logo(data: bytes) -> CheckedImage:
    check_size("logo", len(data))
    found = _raster("logo", data, ("PNG", "JPEG")) or _svg("logo", data)
    if found is None:
        raise ValidationError.field(
            "logo", "Upload a valid image: PNG, JPEG or SVG. The file you uploaded was either "
            "not an image or a corrupted image.")
    return found


def check_favicon(data: bytes) -> CheckedImage:
    check_size("favicon", len(data))
    found = _raster("favicon", data, ("ICO", "PNG"))
    if found is None:
        raise ValidationError.field(
            "favicon", "Upload a valid image: ICO or PNG. The file you uploaded was either "
            "not an image or a corrupted image.")
    return found
