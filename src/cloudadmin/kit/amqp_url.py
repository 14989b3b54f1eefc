"""AMQP connection strings: amqp[s]://user:password@host:port/vhost.

User, password and virtual host may be percent-encoded (RFC 3986, as the AMQP URI
spec says): ``p%40ss`` is the password ``p@ss`` and ``%2F`` the virtual host ``/``.
Reserved characters must be encoded, so that the string has exactly one reading.

The one parser of them: the API (which also applies the outbound policy) and the
importer both validate with ``problems_of``, so a string one door accepts the other
accepts too.
"""

from __future__ import annotations

import re

MAX_LENGTH = 2048
SCHEMES = ("amqp", "amqps")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9\-_.]*[A-Za-z0-9])?$")
_IPV6 = re.compile(r"^\[[0-9A-Fa-f:.]+\]$")


def problems_of(value: str) -> list[str]:
    """Every problem of ``value``, one message each; empty when it is valid."""
    if len(value) > MAX_LENGTH:
        return [f"Ensure this value has at most {MAX_LENGTH} characters."]
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return ["The connection string must not contain spaces or control characters."]
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        return ["The scheme must be amqp:// or amqps://."]
    found: list[str] = []
    if "#" in rest:
        found.append("The connection string must not have a fragment (#).")
        rest = rest.split("#", 1)[0]
    authority, slash, path = rest.partition("/")
    if "?" in authority:  # "amqp://u:p@host?x" - no path at all
        authority, slash, path = authority.split("?", 1)[0], "", ""
    path = path.split("?", 1)[0]

    at_signs = authority.count("@")
    if at_signs == 0:
        found.append("The user is missing.")
        found.append("The password is missing.")
        hostport = authority
    else:
        if at_signs > 1:
            found.append(
                "Reserved characters in the user or password must be percent-encoded ('@' as %40)."
            )
        userinfo, _, hostport = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if not user:
            found.append("The user is missing.")
        elif _BAD_PERCENT.search(user):
            found.append("The user has an invalid percent-encoding.")
        if not colon or not password:
            found.append("The password is missing.")
        elif _BAD_PERCENT.search(password) or ":" in password:
            found.append("The password has an invalid percent-encoding (encode ':' as %3A).")

    if hostport.startswith("["):
        host, bracket, after = hostport.partition("]")
        host += bracket
        port_sep, port = after[:1], after[1:]
        if after and port_sep != ":":
            found.append("The host is not a valid host name or address.")
    else:
        host, port_sep, port = hostport.partition(":")
    if not host:
        found.append("The host is missing.")
    elif not (_HOST_NAME.match(host) or _IPV6.match(host)):
        found.append("The host is not a valid host name or address.")
    if not port_sep or not port:
        found.append("The port is missing.")
    elif not port.isdigit() or not port.isascii():
        found.append("The port must be a number from 1 to 65535.")
    elif not 1 <= int(port) <= 65535:
        found.append("The port must be from 1 to 65535.")

    if not slash or not path:
        found.append("The virtual host is missing (the default virtual host '/' is %2F).")
    elif "/" in path:
        found.append("The virtual host must be one path segment (encode '/' as %2F).")
    elif _BAD_PERCENT.search(path):
        found.append("The virtual host has an invalid percent-encoding.")
    return found


def host_and_port(value: str) -> tuple[str, int]:
    """The host (IPv6 without brackets) and port of a valid connection string."""
    rest = value.partition("://")[2]
    hostport = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    host, _, port = hostport.rpartition(":")
    return host.removeprefix("[").removesuffix("]"), int(port)
