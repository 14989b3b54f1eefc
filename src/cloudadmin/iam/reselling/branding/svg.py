"""SVG logos are refused, never sanitised, when they hold active or external content.

The file is parsed by defusedxml (no DTD, hence no entities and no external entities),
then the parsed tree is inspected: attribute values as the parser decoded them (character
references such as ``&#106;`` resolved), URLs as a browser's URL parser reads them (tabs
and newlines dropped, spaces and controls trimmed, any case), CSS as tinycss2 tokenises
it (escapes such as ``u\\72l(`` resolved). Obfuscation therefore changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from xml.etree import ElementTree

import tinycss2
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

XHTML_NS = "{http://www.w3.org/1999/xhtml}"
XINCLUDE_NS = "{http://www.w3.org/2001/XInclude}"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"

# Elements that run code or embed another document.
_ACTIVE_ELEMENTS = {"script", "foreignobject", "iframe", "embed", "object", "handler", "listener"}
_ANIMATIONS = {"animate", "set", "animatetransform", "animatemotion", "animatecolor"}
# Attributes whose value is one URL.
_URL_ATTRIBUTES = {"href", "src", "action", "formaction"}
# CSS functions whose string arguments are URLs.
_URL_FUNCTIONS = {"url", "src", "image-set", "-webkit-image-set"}
# The only data: URLs allowed: raster images, which cannot hold a document or a script.
_RASTER_DATA = re.compile(r"data:\s*image/(png|jpeg|gif|webp)\s*[;,]")
_URL_TRIM = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TABS_AND_NEWLINES = re.compile(r"[\t\n\r]")


class Refused(ValueError):
    """The SVG holds active or external content; the message says what."""


def is_local(url: str) -> bool:
    """A reference within the document (``#id``) or a data: URL of a raster image."""
    url = _TABS_AND_NEWLINES.sub("", url).strip(_URL_TRIM).lower()
    return url.startswith("#") or _RASTER_DATA.match(url) is not None


class _Builder(ElementTree.TreeBuilder):
    """Keeps the targets of processing instructions, even those before the root."""

    def __init__(self) -> None:
        super().__init__()
        self.instructions: list[str] = []

    def pi(self, target: str, text: str | None = None) -> ElementTree.Element:
        self.instructions.append(target.lower())
        return super().pi(target, text)


def parse(text: str) -> ElementTree.Element | None:
    """The root of an SVG document; None when it is not one. Raises Refused."""
    builder = _Builder()
    parser = DefusedXMLParser(
        target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    try:
        parser.feed(text)
        root: ElementTree.Element = parser.close()
    except DefusedXmlException as exc:
        raise Refused("a DOCTYPE or entities") from exc
    except ElementTree.ParseError:
        return None
    if _local(root.tag) != "svg":
        return None
    if "xml-stylesheet" in builder.instructions:
        raise Refused("an xml-stylesheet instruction")
    _inspect(root)
    return root


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()


def _inspect(root: ElementTree.Element) -> None:
    for element in root.iter():
        tag = element.tag
        if not isinstance(tag, str):
            continue
        name = _local(tag)
        if tag.startswith(XHTML_NS):
            raise Refused(f"an XHTML element (<{name}>)")
        if tag.startswith(XINCLUDE_NS):
            raise Refused("an XInclude")
        if name in _ACTIVE_ELEMENTS:
            raise Refused(f"a <{name}> element")
        if name in _ANIMATIONS:
            target = _local(element.get("attributeName", "").strip())
            if target == "href" or target.startswith("on"):
                raise Refused(f"an animation that writes {target} (<{name}>)")
        if name == "style":
            _inspect_css("".join(element.itertext()), "<style>")
        for attribute, value in element.attrib.items():
            _inspect_attribute(name, attribute, value)


def _inspect_attribute(element: str, attribute: str, value: str) -> None:
    name = _local(attribute)
    where = f"<{element} {name}>"
    if name.startswith("on"):
        raise Refused(f"an event attribute ({where})")
    if attribute == XML_BASE:
        raise Refused(f"an xml:base ({where})")
    if name in _URL_ATTRIBUTES and not is_local(value):
        raise Refused(f"a reference outside the document ({where})")
    # Presentation attributes (fill, filter, mask...) and style= take CSS values.
    _inspect_css(value, where)


def _inspect_css(css: str, where: str) -> None:
    # Every refused construct needs "(" or "@" (escapes need "\\"): plain values such as
    # megabytes of path data are not tokenised.
    if "(" in css or "@" in css or "\\" in css:
        _walk(tinycss2.parse_component_value_list(css), where)


def _walk(nodes: Iterable[Any], where: str) -> None:
    """``nodes``: tinycss2's (an untyped library); each kind has its own attributes."""
    for node in nodes:
        kind = getattr(node, "type", "")
        if kind == "at-keyword" and node.lower_value == "import":
            raise Refused(f"a CSS @import ({where})")
        if kind == "url" and not is_local(node.value):
            raise Refused(f"a CSS url() outside the document ({where})")
        if kind == "function":
            function = node.lower_name
            arguments = node.arguments
            if function == "expression":
                raise Refused(f"a CSS expression() ({where})")
            if function in _URL_FUNCTIONS and not all(
                is_local(url) for url in _urls_in(function, arguments)
            ):
                raise Refused(f"a CSS {function}() outside the document ({where})")
            _walk(arguments, where)
        if kind in ("() block", "[] block", "{} block"):
            _walk(node.content, where)


def _urls_in(function: str, arguments: list[Any]) -> list[str]:
    """The URLs a CSS function names: its strings, and for url() and src() whatever
    else it holds (a url() whose name was written with escapes is parsed as a function)."""
    urls = [arg.value for arg in arguments if arg.type == "string"]
    if function in ("url", "src"):
        rest = tinycss2.serialize(arg for arg in arguments if arg.type != "string").strip()
        if rest:
            urls.append(rest)
    return urls
