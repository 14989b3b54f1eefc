"""Response headers of a stored logo or favicon.

An SVG is a document: opened on its own (a navigation), a browser would render it with
the service's origin. So it is sent as a download unless the request asks for an image
(an ``<img>``, a CSS background, a ``<link rel=icon>``), and always with ``nosniff`` and
a CSP that allows no script, no plugin and no request.
"""

from __future__ import annotations

from starlette.datastructures import Headers

# `img-src data:` lets a logo's embedded raster images (data: URLs, the only ones it may
# hold) show; `sandbox` gives a document opened anyway a unique origin, without scripts.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"
SVG = "image/svg+xml"


def _quality(accept: str, media_type: str) -> float:
    """The q that an Accept header gives a media type: that of the most specific range
    matching it (RFC 9110, 12.5.1); 0 when none does."""
    main = media_type.split("/", 1)[0]
    ranks = {media_type: 2, f"{main}/*": 1, "*/*": 0}
    best_rank, best_q = -1, 0.0
    for item in accept.split(","):
        media_range, *params = (piece.strip() for piece in item.split(";"))
        rank = ranks.get(media_range.lower(), -1)
        if rank <= best_rank:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best_rank, best_q = rank, q
    return best_q


def wants_image(request_headers: Headers) -> bool:
    """Sec-Fetch-Dest says what the browser will do with the answer; without it, an
    Accept that prefers SVG images to HTML."""
    destination = request_headers.get("sec-fetch-dest")
    if destination:
        return destination.strip().lower() == "image"
    accept = request_headers.get("accept", "")
    return _quality(accept, SVG) > _quality(accept, "text/html")


def file_headers(name: str, media_type: str, request_headers: Headers) -> dict[str, str]:
    headers = {
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": CSP,
    }
    if media_type == SVG:
        # The answer differs by these request headers: caches must keep both variants.
        headers["Vary"] = "Sec-Fetch-Dest, Accept"
        if not wants_image(request_headers):
            headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return headers
