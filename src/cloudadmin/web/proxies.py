"""Pure-ASGI middleware: the client address behind trusted proxies (configuration.md).

``X-Forwarded-For`` is a list any client can start, to which each proxy appends the
address it received the request from. Only the hops our own proxies appended can be
believed, so the list is read from the right: past the peer (which must be a trusted
proxy, else the header is ignored) and past every trusted address, the first address
that is not one of our proxies is the client. A value that is not an IP address was
not written by a proxy of ours: the walk stops there, before it, and the client is the
last trusted hop; such a value is never used. This is the one place that reads the
header: uvicorn's own proxy handling is off (cli.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_SCHEMES = {"http": {"http", "https"}, "websocket": {"ws", "wss"}}


def parse_networks(values: Iterable[str]) -> list[IPNetwork]:
    """``10.0.0.0/8``, ``192.0.2.7``, ``::1``: each as a network (an address as /32, /128)."""
    return [ipaddress.ip_network(value.strip(), strict=False) for value in values]


def parse_address(value: str) -> IPAddress | None:
    """A plain IPv4 or IPv6 address, else None (ports, names, zone ids and anything
    longer than an address are refused: they could not come from our proxies)."""
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id is not None:
            return None
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
    return address


class TrustedProxyMiddleware:
    """Sets ``scope["client"]`` (and the scheme, from ``X-Forwarded-Proto``) from the
    forwarding headers when the peer is a trusted proxy; otherwise leaves them alone."""

    def __init__(self, app: ASGIApp, *, trusted: Iterable[str]) -> None:
        self.app = app
        self.trusted = parse_networks(trusted)

    def _is_trusted(self, address: IPAddress | None) -> bool:
        return address is not None and any(address in net for net in self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in _SCHEMES and self.trusted:
            self._resolve(scope)
        await self.app(scope, receive, send)

    def _resolve(self, scope: Scope) -> None:
        client = scope.get("client")
        if not client or not self._is_trusted(parse_address(str(client[0]))):
            return
        forwarded: list[str] = []
        proto: list[str] = []
        for key, value in scope["headers"]:
            name = key.lower()
            if name == b"x-forwarded-for":
                forwarded.extend(value.decode("latin-1").split(","))
            elif name == b"x-forwarded-proto":
                proto.extend(value.decode("latin-1").split(","))
        host = str(client[0])
        for hop in reversed(forwarded):
            address = parse_address(hop)
            if address is None:
                break  # not written by a proxy of ours: keep the last trusted hop
            host = str(address)
            if not self._is_trusted(address):
                break  # the rightmost hop that is not ours: the client
        # Mutated in place, as uvicorn does, so its access log shows the client too.
        scope["client"] = (host, 0) if host != str(client[0]) else client
        if proto and (scheme := proto[-1].strip().lower()) in _SCHEMES[scope["type"]]:
            scope["scheme"] = scheme
