"""The live preview of a customer portal's header with the brand's colours, name, logo
and favicon (docs/portal.md, "Vendor settings", "The preview" *(decision)*).

The portal's Content-Security-Policy allows no inline style, so the typed colours cannot
go into a ``style=`` attribute. The header is drawn as an SVG image by a route of its own
(``/portal/vendor/preview.svg``, the colours and the brand name in its query): inside an
image, the colours are presentation attributes (``fill``) of its own document, checked
against a strict colour pattern first and escaped. The stored logo and favicon are
``<img>`` elements laid over the image by portal.css (an SVG used as an image loads
nothing from outside itself). While the colour fields are typed in, htmx fetches the
preview's fragment (``/portal/vendor/preview``, a GET of those fields only: the form's
CSRF token stays out of URLs) and swaps it in; nothing is saved until the form is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

# What the preview draws: a hex colour, a name, or rgb()/hsl() of plain numbers. The
# API stores any text of up to 32 characters as a colour; what the preview cannot tell
# to be a colour it draws in the default, and says so.
_COLOUR = re.compile(
    r"#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})"
    r"|[a-z]{3,30}"
    r"|(?:rgb|rgba|hsl|hsla)\([0-9.,%/ deg+-]{1,48}\)",
    re.IGNORECASE,
)
DEFAULTS = {"header": "#ffffff", "headerText": "#1d2330", "primary": "#1f5fbf"}
LABELS = {"header": "header colour", "headerText": "header text colour", "primary": "brand colour"}
BRAND_CHARS = 40


def is_colour(value: str) -> bool:
    return bool(_COLOUR.fullmatch(value))


@dataclass(frozen=True)
class Preview:
    """What the preview shows: the colours drawn (the typed ones or the defaults), the
    brand name, the stored images' URLs, and the typed values that are not colours."""

    colours: dict[str, str]
    brand: str
    logo: str | None
    favicon: str | None
    not_colours: dict[str, str]

    @property
    def image_url(self) -> str:
        query = {**self.colours, "brandName": self.brand, "logo": "1" if self.logo else ""}
        return f"/portal/vendor/preview.svg?{urlencode(query)}"

    @property
    def description(self) -> str:
        shown = ", ".join(f"{LABELS[name]} {value}" for name, value in self.colours.items())
        brand = f"brand name {self.brand}" if self.brand else "no brand name"
        return f"Preview of the customer portal's header: {shown}, {brand}."


def preview_of(
    values: dict[str, str] | QueryParams, logo: str | None, favicon: str | None
) -> Preview:
    colours: dict[str, str] = {}
    not_colours: dict[str, str] = {}
    for name, default in DEFAULTS.items():
        typed = str(values.get(name) or "").strip()
        if typed and not is_colour(typed):
            not_colours[name] = typed[:32]
        colours[name] = typed if typed and is_colour(typed) else default
    brand = str(values.get("brandName") or "").strip()[:BRAND_CHARS]
    return Preview(colours, brand, logo, favicon, not_colours)


def svg_values(query: QueryParams) -> dict[str, str | bool]:
    """The SVG's values from its query: colours that are not colours are the defaults."""
    drawn = preview_of(query, None, None)
    return {**drawn.colours, "brand": drawn.brand, "logo": query.get("logo") == "1"}
