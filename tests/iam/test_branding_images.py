"""Hostile logos and favicons: pixel bombs refused from their headers, SVGs with active or
external content refused with a reason, SVGs served as downloads unless asked as images."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import httpx
import pytest
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from tests.factories import Landscape, auth, landscape
from tests.iam.test_branding import UPLOAD, raster, stored

SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'
XLINK_NS = 'xmlns:xlink="http://www.w3.org/1999/xlink"'


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


class PillowOpened(AssertionError):
    """A refusal was expected from the header reader, before Pillow saw the file."""


@pytest.fixture
def pillow_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records (and stops) every Image.open: opening an ICO decodes its largest frame."""
    calls: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise PillowOpened("Image.open was called")

    monkeypatch.setattr(Image, "open", refuse)
    return calls


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int) -> bytes:
    """A black 1-bit greyscale PNG: 9000x9000 compresses to about 10 KB."""
    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte, then the packed pixels
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def bmp_frame(width: int, height: int) -> bytes:
    """An ICO's BMP frame header (BITMAPINFOHEADER; the height counts the AND mask too)
    with only a few bytes of pixels behind it."""
    return struct.pack("<IiiHHIIiiII", 40, width, height * 2, 1, 1, 0, 0, 0, 0, 0, 0) + bytes(64)


def ico(*frames: bytes) -> bytes:
    """An ICO container; each directory entry says 0x0 (= 256x256), the most it can say."""
    offset = 6 + 16 * len(frames)
    directory, body = b"", b""
    for frame in frames:
        directory += struct.pack("<BBBBHHII", 0, 0, 0, 0, 1, 32, len(frame), offset + len(body))
        body += frame
    return struct.pack("<HHH", 0, 1, len(frames)) + directory + body


def jpeg(size: tuple[int, int]) -> bytes:
    return raster("JPEG", size)


async def upload(
    client: httpx.AsyncClient, ls: Landscape, part: str, content: bytes
) -> httpx.Response:
    return await client.post(
        UPLOAD,
        headers=auth(ls.reseller),
        files={part: (f"{part}.bin", content, "application/octet-stream")},
    )


def refusal(r: httpx.Response, part: str) -> str:
    assert r.status_code == 400, r.text
    assert r.json()["exception_class"] == "ValidationError"
    assert list(r.json()["errors"]) == [part]
    return str(r.json()["errors"][part])


HUGE = 9000  # 81 megapixels: 324 MB decoded as RGBA
PIXEL_BOMBS = {
    "ICO wrapping a 9000x9000 PNG": ("favicon", lambda: ico(png(HUGE, HUGE))),
    "ICO with a 9000x9000 BMP frame": ("favicon", lambda: ico(bmp_frame(HUGE, HUGE))),
    "ICO with a small frame, then a huge one": (
        "favicon",
        lambda: ico(png(16, 16), png(HUGE, HUGE)),
    ),
    "PNG favicon of 9000x9000": ("favicon", lambda: png(HUGE, HUGE)),
    "PNG logo of 9000x9000": ("logo", lambda: png(HUGE, HUGE)),
    "PNG logo one pixel over the default cap": ("logo", lambda: png(2049, 2048)),
}


class TestPixelBombs:
    @pytest.mark.parametrize("kind", list(PIXEL_BOMBS))
    async def test_refused_from_the_headers_before_pillow_opens_it(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        pillow_opens: list[object],
        kind: str,
    ):
        part, build = PIXEL_BOMBS[kind]
        content = build()
        assert len(content) < 64 * 1024  # a few KB on the wire
        message = refusal(await upload(client, ls, part, content), part)
        assert "too large" in message and f"{2048 * 2048} pixels" in message
        assert pillow_opens == []  # nothing was decoded, nor even opened
        assert await stored(session, ls.reseller_account.id) is None

    async def test_the_frame_size_is_named(
        self, client: httpx.AsyncClient, ls: Landscape, pillow_opens: list[object]
    ):
        message = refusal(await upload(client, ls, "favicon", ico(png(HUGE, HUGE))), "favicon")
        assert f"{HUGE}x{HUGE}" in message

    @pytest.mark.parametrize("part", ["logo", "favicon"])
    async def test_an_image_at_the_default_cap_is_accepted(
        self, client: httpx.AsyncClient, ls: Landscape, part: str
    ):
        r = await upload(client, ls, part, png(2048, 2048))
        assert r.status_code == 200, r.text


class TestPixelCapSetting:
    CAP = 64 * 64

    @pytest.fixture
    def settings(
        self, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Settings:
        # The app sets Pillow's process-wide cap; put it back for the tests that follow.
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)
        return Settings(
            database_url=database_url,
            secret_key="test-secret-key",
            data_dir=tmp_path / "data",
            max_image_pixels=self.CAP,
        )

    async def test_is_pillows_own_cap(self, app: object):
        assert Image.MAX_IMAGE_PIXELS == self.CAP

    @pytest.mark.parametrize(
        ("part", "content"),
        [
            ("logo", raster("PNG", (64, 64))),
            ("logo", jpeg((64, 64))),
            ("favicon", raster("ICO", (64, 64))),
        ],
    )
    async def test_at_the_cap_is_accepted(
        self, client: httpx.AsyncClient, ls: Landscape, part: str, content: bytes
    ):
        assert (await upload(client, ls, part, content)).status_code == 200

    @pytest.mark.parametrize(
        ("part", "content"),
        [
            ("logo", raster("PNG", (65, 64))),
            ("favicon", ico(raster("PNG", (65, 64)))),
            ("favicon", ico(bmp_frame(65, 64))),
        ],
    )
    async def test_one_pixel_over_is_refused(
        self, client: httpx.AsyncClient, ls: Landscape, part: str, content: bytes
    ):
        assert "too large" in refusal(await upload(client, ls, part, content), part)

    # A JPEG's size is read by Pillow from its markers: Pillow's own cap refuses it,
    # with a warning over the cap and DecompressionBombError over twice the cap.
    @pytest.mark.parametrize("size", [(65, 64), (200, 200)])
    async def test_pillows_refusal_of_a_jpeg_is_a_400(
        self, client: httpx.AsyncClient, ls: Landscape, size: tuple[int, int]
    ):
        assert "too large" in refusal(await upload(client, ls, "logo", jpeg(size)), "logo")


def svg(body: str, *namespaces: str, prolog: str = "") -> bytes:
    return (
        f'{prolog}<svg {" ".join((SVG_NS, *namespaces))} width="10" height="10">{body}</svg>'
    ).encode()


def link(href: str) -> bytes:
    return svg(f'<a href="{href}"><rect width="5" height="5"/></a>')


OUTSIDE = "a reference outside the document"
# name: (file, what the refusal must name)
HOSTILE_SVGS: dict[str, tuple[bytes, str]] = {
    "javascript: with a tab entity": (link("jav&#x09;ascript:alert(1)"), OUTSIDE),
    "javascript: with a decimal entity": (link("&#106;avascript:alert(1)"), OUTSIDE),
    "javascript: with a leading space": (link(" javascript:alert(1)"), OUTSIDE),
    "javascript: in mixed case": (link("JaVaScRiPt:alert(1)"), OUTSIDE),
    "javascript: with a newline inside": (link("java&#10;script:alert(1)"), OUTSIDE),
    "javascript: in xlink:href": (
        svg('<a xlink:href="&#x6A;avascript:alert(1)"><rect width="5" height="5"/></a>', XLINK_NS),
        OUTSIDE,
    ),
    "vbscript:": (link("vbscript:msgbox(1)"), OUTSIDE),
    "data:text/html link": (link("data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;"), OUTSIDE),
    "data:image/svg+xml image": (
        svg(
            '<image href="data:image/svg+xml;base64,'
            + base64.b64encode(b"<svg onload='alert(1)'/>").decode()
            + '"/>'
        ),
        OUTSIDE,
    ),
    "external image": (svg('<image href="https://evil.example/track.png"/>'), OUTSIDE),
    "external feImage": (
        svg('<filter id="f"><feImage href="//evil.example/x.png"/></filter>'),
        OUTSIDE,
    ),
    "external use": (svg('<use href="https://evil.example/sprite.svg#a"/>'), OUTSIDE),
    "relative external use": (svg('<use xlink:href="sprite.svg#a"/>', XLINK_NS), OUTSIDE),
    "animate writing href": (
        svg(
            '<a href="#x"><animate attributeName="href" values="javascript:alert(1)"/>'
            '<rect width="5" height="5"/></a>'
        ),
        "an animation that writes href (<animate>)",
    ),
    "set writing xlink:href": (
        svg(
            '<a><set attributeName="xlink:href" to="javascript:alert(1)"/>'
            '<rect width="5" height="5"/></a>'
        ),
        "an animation that writes href (<set>)",
    ),
    "animateTransform aimed at href": (
        svg('<a><animateTransform attributeName=" href" to="#x"/></a>'),
        "an animation that writes href (<animatetransform>)",
    ),
    "CSS url() in <style>": (
        svg("<style>rect { fill: url(https://evil.example/p.svg#g) }</style>"),
        "a CSS url() outside the document (<style>)",
    ),
    "CSS url() written with escapes": (
        svg("<style>rect { fill: u\\72l(https://evil.example/p) }</style>"),
        "a CSS url() outside the document",
    ),
    "CSS url() in style=": (
        svg('<rect style="fill: url(\'//evil.example/p.svg#g\')" width="5" height="5"/>'),
        "a CSS url() outside the document (<rect style>)",
    ),
    "CSS url() in a presentation attribute": (
        svg('<rect fill="url(https://evil.example/p.svg#g)" width="5" height="5"/>'),
        "a CSS url() outside the document (<rect fill>)",
    ),
    "CSS image-set()": (
        svg(
            '<rect style="background: image-set(&quot;https://evil.example/x.png&quot; 1x)"'
            ' width="5" height="5"/>'
        ),
        "a CSS image-set() outside the document",
    ),
    "@import in <style>": (
        svg('<style>@import "https://evil.example/x.css";</style>'),
        "a CSS @import (<style>)",
    ),
    "@import written with escapes": (svg("<style>@\\69mport 'x.css';</style>"), "a CSS @import"),
    "@import in style=": (svg('<g style="@import url(x.css)"/>'), "a CSS @import"),
    "XInclude": (
        svg(
            '<xi:include href="file:///etc/passwd" parse="text"/>',
            'xmlns:xi="http://www.w3.org/2001/XInclude"',
        ),
        "an XInclude",
    ),
    "xml:base": (svg('<g xml:base="https://evil.example/"><use href="#a"/></g>'), "an xml:base"),
    "script element": (svg("<script>alert(1)</script>"), "a <script> element"),
    "XHTML script": (
        svg('<h:script xmlns:h="http://www.w3.org/1999/xhtml">alert(1)</h:script>'),
        "an XHTML element (<script>)",
    ),
    "event attribute": (
        svg('<rect onclick="alert(1)" width="5" height="5"/>'),
        "an event attribute (<rect onclick>)",
    ),
    "foreignObject": (
        svg('<foreignObject><body xmlns="http://www.w3.org/1999/xhtml">x</body></foreignObject>'),
        "a <foreignobject> element",
    ),
    "external DTD": (
        svg("", prolog='<!DOCTYPE svg SYSTEM "https://evil.example/x.dtd">'),
        "a DOCTYPE or entities",
    ),
    "external entity": (
        svg("&x;", prolog='<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'),
        "a DOCTYPE or entities",
    ),
    "xml-stylesheet": (
        svg("", prolog='<?xml-stylesheet href="https://evil.example/x.css"?>'),
        "an xml-stylesheet instruction",
    ),
}

_PIXEL = base64.b64encode(raster("PNG", (1, 1))).decode()
CLEAN_SVGS = {
    "gradient fill": svg(
        '<defs><linearGradient id="g"/></defs><rect fill="url(#g)" width="5" height="5"/>'
    ),
    "local use": svg(
        '<defs><rect id="a" width="5" height="5"/></defs><use href="#a"/><use xlink:href=" #a"/>',
        XLINK_NS,
    ),
    "style sheet with local url()": svg('<style>.a { fill: url("#g"); stroke: #000 }</style>'),
    "embedded PNG": svg(f'<image href="data:image/png;base64,{_PIXEL}" width="5" height="5"/>'),
    "animation of a colour": svg(
        '<rect width="5" height="5"><animate attributeName="fill" '
        'values="red;blue" dur="1s"/></rect>'
    ),
}


class TestSvgLogos:
    @pytest.mark.parametrize("kind", list(HOSTILE_SVGS))
    async def test_active_or_external_content_is_refused_with_the_reason(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, kind: str
    ):
        content, reason = HOSTILE_SVGS[kind]
        message = refusal(await upload(client, ls, "logo", content), "logo")
        assert f"SVG images that hold {reason}" in message
        assert await stored(session, ls.reseller_account.id) is None

    @pytest.mark.parametrize("kind", list(CLEAN_SVGS))
    async def test_self_contained_content_is_accepted(
        self, client: httpx.AsyncClient, ls: Landscape, kind: str
    ):
        r = await upload(client, ls, "logo", CLEAN_SVGS[kind])
        assert r.status_code == 200, r.text


NAVIGATION = {
    "Sec-Fetch-Dest": "document",
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
}
IMG_TAG = {
    "Sec-Fetch-Dest": "image",
    "Accept": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
}


class TestServedSvg:
    @pytest.fixture
    async def url(self, client: httpx.AsyncClient, ls: Landscape) -> str:
        r = await upload(client, ls, "logo", CLEAN_SVGS["gradient fill"])
        return str(r.json()["publicSettings"]["logo"])

    @pytest.mark.parametrize(
        "request_headers",
        [
            NAVIGATION,
            {"Accept": "*/*"},
            {"Accept": "text/html,image/svg+xml;q=0.9"},
            {"Sec-Fetch-Dest": "iframe", "Accept": "image/svg+xml"},
        ],
        ids=["navigation", "anything", "html preferred", "iframe"],
    )
    async def test_is_a_download_unless_asked_as_an_image(
        self, client: httpx.AsyncClient, url: str, request_headers: dict[str, str]
    ):
        r = await client.get(url, headers=request_headers)
        assert r.status_code == 200
        name = url.rsplit("/", 1)[1]
        assert r.headers["content-disposition"] == f'attachment; filename="{name}"'
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
        assert "sandbox" in r.headers["content-security-policy"]
        assert "Sec-Fetch-Dest" in r.headers["vary"] and "Accept" in r.headers["vary"]

    @pytest.mark.parametrize(
        "request_headers",
        [
            IMG_TAG,
            {"Accept": "image/svg+xml,image/*;q=0.8"},
            {"Accept": "image/*"},
        ],
        ids=["img tag", "svg accepted", "any image"],
    )
    async def test_is_inline_when_asked_as_an_image(
        self, client: httpx.AsyncClient, url: str, request_headers: dict[str, str]
    ):
        r = await client.get(url, headers=request_headers)
        assert r.status_code == 200
        assert "content-disposition" not in r.headers
        assert r.headers["content-type"].startswith("image/svg+xml")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]
        assert "Sec-Fetch-Dest" in r.headers["vary"]

    async def test_raster_files_are_never_downloads(self, client: httpx.AsyncClient, ls: Landscape):
        r = await upload(client, ls, "logo", raster("PNG"))
        served = await client.get(r.json()["publicSettings"]["logo"], headers=NAVIGATION)
        assert "content-disposition" not in served.headers
