"""What a webhook subscription may name: its URL and its secret header."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from cloudadmin.kit.outbound import Outbound, OutboundRefused

URL_MAX = 2048
HEADER_NAME_MAX = 255
HEADER_VALUE_MAX = 4096
# RFC 9110 token characters.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9\-_.]*[A-Za-z0-9])?\.?")
# Visible ASCII, space and tab: what HTTP/1.1 carries as a header value unchanged.
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
# Headers the service sets itself, or that steer the connection rather than say who
# sends: a subscriber's value there would break or smuggle the request.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "x-message-id",
        "proxy-authorization",
        "proxy-connection",
    }
)


def url_problems(value: str, outbound: Outbound) -> list[str]:
    """Every problem of ``value`` as a webhook URL (empty when it may be used).

    A host name is checked again, resolved, each time the service connects."""
    if len(value) > URL_MAX:
        return [f"Ensure this value has at most {URL_MAX} characters."]
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return ["The URL must not contain spaces or control characters."]
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return ["Enter a valid URL."]
    if parts.scheme.lower() not in ("http", "https"):
        return ["The scheme must be http:// or https://."]
    found: list[str] = []
    host = parts.hostname or ""
    if parts.username is not None or parts.password is not None:
        found.append(
            "The URL must not carry a user name or password (send the credential "
            "in the auth header)."
        )
    if parts.fragment or value.endswith("#"):
        found.append("The URL must not have a fragment (#).")
    if not host:
        found.append("The host is missing.")
    elif not (_HOST_NAME.fullmatch(host) or (":" in host and parts.netloc.count("[") == 1)):
        found.append("The host is not a valid host name or address.")
    if port == 0:
        found.append("The port must be from 1 to 65535.")
    if not found and host:
        try:
            outbound.check_host(host)
        except OutboundRefused as exc:
            found.append(str(exc))
    return found


def header_name_problems(value: str) -> list[str]:
    if not value:
        return ["This field may not be blank."]
    if len(value) > HEADER_NAME_MAX:
        return [f"Ensure this value has at most {HEADER_NAME_MAX} characters."]
    if not _TOKEN.fullmatch(value):
        return ["Enter a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)."]
    if value.lower() in RESERVED_HEADERS:
        return [f"The header {value} is set by the service and cannot be used."]
    return []


def header_value_problems(value: str) -> list[str]:
    # The value itself is never quoted back: it is a secret.
    if not value:
        return ["This field may not be blank."]
    if len(value) > HEADER_VALUE_MAX:
        return [f"Ensure this value has at most {HEADER_VALUE_MAX} characters."]
    if not _HEADER_VALUE.fullmatch(value) or value != value.strip(" \t"):
        return [
            "Enter a valid HTTP header value: visible ASCII characters and spaces, "
            "without leading or trailing spaces."
        ]
    return []
