"""Declared pixel sizes of PNG and ICO files, read from their headers, never decoding.

Pillow decodes an ICO's largest frame while *opening* it (``IcoImageFile._open`` calls
``load``), so a size check after ``Image.open`` comes too late: a 9000x9000 PNG wrapped
in an ICO cost seconds and hundreds of MB before it was refused. These readers look at a
few bytes per frame instead.
"""

from __future__ import annotations

import struct

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ICO_MAGIC = b"\x00\x00\x01\x00"
_ICO_ENTRY = struct.Struct("<BBBBHHII")  # width, height, colours, 0, planes, bpp, size, offset
Bytes = bytes | memoryview


class Malformed(ValueError):
    """The headers cannot be read: not the format it claims, or truncated."""


def png_size(data: Bytes, offset: int = 0) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which must follow the signature."""
    if (
        data[offset : offset + 8] != PNG_MAGIC
        or data[offset + 12 : offset + 16] != b"IHDR"
        or len(data) < offset + 24
    ):
        raise Malformed("no PNG header")
    width, height = struct.unpack_from(">II", data, offset + 16)
    return width, height


def dib_size(data: Bytes, offset: int) -> tuple[int, int]:
    """Width and height of a BMP frame inside an ICO (a DIB: no file header).

    The declared height counts the colour image and its AND mask together; it is
    returned as declared, which is also what Pillow's own bomb check counts.
    """
    if len(data) < offset + 12:
        raise Malformed("truncated BMP header")
    (header_size,) = struct.unpack_from("<I", data, offset)
    if header_size == 12:  # BITMAPCOREHEADER: 16-bit unsigned sizes
        width, height = struct.unpack_from("<HH", data, offset + 4)
        return width, height
    if header_size < 40 or len(data) < offset + 16:
        raise Malformed("unknown BMP header")
    width, height = struct.unpack_from("<ii", data, offset + 4)
    return abs(width), abs(height)  # a negative height means top-down rows


def ico_sizes(data: bytes) -> list[tuple[int, int]]:
    """Every frame's size, both as its directory entry and as its own header declares.

    A directory entry has one byte per side (0 means 256), so it cannot tell a frame of
    more than 256 pixels a side: the embedded PNG's IHDR or BMP header does.
    """
    if len(data) < 6 or data[:4] != ICO_MAGIC:
        raise Malformed("no ICO header")
    (count,) = struct.unpack_from("<H", data, 4)
    if count == 0 or len(data) < 6 + count * _ICO_ENTRY.size:
        raise Malformed("truncated ICO directory")
    sizes: list[tuple[int, int]] = []
    for index in range(count):
        width, height, _, _, _, _, size, offset = _ICO_ENTRY.unpack_from(
            data, 6 + index * _ICO_ENTRY.size
        )
        if offset + size > len(data) or size < 8:
            raise Malformed("ICO frame outside the file")
        sizes.append((width or 256, height or 256))
        # A frame's header must lie within its own bytes (a view: nothing is copied).
        frame = memoryview(data)[: offset + size]
        if frame[offset : offset + 8] == PNG_MAGIC:
            sizes.append(png_size(frame, offset))
        else:
            sizes.append(dib_size(frame, offset))
    return sizes


def declared_sizes(data: bytes, formats: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The sizes a PNG or ICO declares; None for other formats (JPEG: Pillow's ``open``
    reads only its markers and applies ``Image.MAX_IMAGE_PIXELS`` before any decoding)."""
    if "PNG" in formats and data.startswith(PNG_MAGIC):
        return [png_size(data)]
    if "ICO" in formats and data.startswith(ICO_MAGIC):
        return ico_sizes(data)
    return None
