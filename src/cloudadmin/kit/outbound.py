"""Where the service may connect on a caller's behalf (brokers, mail servers, webhooks).

A client administrator names the host and port of its broker or mail server, and the
service connects there. Unchecked, that lets anyone reach what only the service can:
the loopback interface, the private network, the cloud metadata endpoint. So every
outbound connection to a caller-named host goes through ``Outbound``: the name is
resolved, every address it resolves to is checked, and the socket is connected to one
of the checked addresses itself, so a name that resolves differently the next time
(DNS rebinding) cannot slip past the check. ``CLOUDADMIN_OUTBOUND_ALLOW`` (networks and
host names) lists destinations allowed anyway, e.g. a broker on the private network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudadmin.kit.crypto import SecretBox

if TYPE_CHECKING:
    from cloudadmin.config import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_TIMEOUT = 10.0
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# Instance metadata and neighbouring services of the big clouds. Most are link-local,
# CGNAT or unique-local anyway; they are named so the refusal says what they are.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean...
        "169.254.169.253",  # AWS DNS
        "169.254.169.123",  # AWS time
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (classic)
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::253",
        "fd00:ec2::123",
    )
)
# Names that mean this machine (RFC 6761) or the metadata service, without asking DNS.
_LOCAL_NAMES = re.compile(r"^(localhost|.*\.localhost)$")
_METADATA_NAMES = frozenset({"metadata", "metadata.google.internal"})
_IPV4_NUMBERS = re.compile(r"^[0-9a-fx.]+$")


class OutboundRefused(Exception):
    """The destination is not allowed; ``str()`` says why, for the caller."""


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is refused by default (``None``: a public address)."""
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv4 address in IPv6 clothing is judged as the IPv4 address.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            inner = refusal_reason(embedded)
            if inner is not None:
                return inner
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address in _CGNAT:
        return "a carrier-grade NAT (shared) address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells, in any form the resolver would take as an address
    (``[::1]``, ``127.1``, ``0x7f000001``, ``2130706433``), else ``None``."""
    host = host.strip().removeprefix("[").removesuffix("]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _IPV4_NUMBERS.match(host.lower()):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _normal_name(host: str) -> str:
    return host.strip().removeprefix("[").removesuffix("]").rstrip(".").lower()


@dataclass(frozen=True)
class Outbound:
    """The allow-list and the connect timeout; the default refuses every non-public
    address."""

    networks: tuple[IPNetwork, ...] = ()
    names: frozenset[str] = frozenset()
    # "*.corp.example" entries: any name under corp.example.
    suffixes: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_entries(cls, entries: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT) -> Outbound:
        """``entries``: CIDRs, addresses, host names and ``*.`` suffixes. ValueError
        names an entry that is none of them."""
        networks: list[IPNetwork] = []
        names: set[str] = set()
        suffixes: list[str] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = _normal_name(entry)
            bare = name.removeprefix("*.")
            if not bare or not re.fullmatch(r"[a-z0-9_]([a-z0-9_.\-]*[a-z0-9_])?", bare):
                raise ValueError(f"outbound_allow: {raw!r} is not a network, address or host name")
            if name.startswith("*."):
                suffixes.append("." + bare)
            else:
                names.add(name)
        return cls(tuple(networks), frozenset(names), tuple(suffixes), timeout)

    @classmethod
    def from_settings(cls, settings: Settings) -> Outbound:
        return cls.from_entries(settings.outbound_allow, timeout=settings.outbound_timeout_seconds)

    # ---- checks ----------------------------------------------------------------

    def name_allowed(self, host: str) -> bool:
        name = _normal_name(host)
        return name in self.names or any(name.endswith(s) for s in self.suffixes)

    def check_address(self, address: IPAddress, host: str | None = None) -> None:
        """OutboundRefused unless ``address`` is public or in an allowed network."""
        judged = address
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            judged = address.ipv4_mapped
        if any(judged in net for net in self.networks):
            return
        reason = refusal_reason(address)
        if reason is not None:
            shown = (
                f"{host} resolves to {address}, "
                if host and host != str(address)
                else f"{address} is "
            )
            raise OutboundRefused(f"Connections to this address are not allowed: {shown}{reason}.")

    def check_host(self, host: str) -> None:
        """What can be told without asking DNS, when a destination is saved: an address
        literal, ``localhost`` and the like. Names are resolved and checked when
        connecting (each time: what a name resolves to may change)."""
        if not host or self.name_allowed(host):
            return
        address = literal_address(host)
        if address is not None:
            self.check_address(address)
            return
        name = _normal_name(host)
        what = (
            "this machine"
            if _LOCAL_NAMES.match(name)
            else "the cloud metadata service"
            if name in _METADATA_NAMES
            else None
        )
        if what is not None:
            raise OutboundRefused(f"Connections to this address are not allowed: {name} is {what}.")

    async def resolve(
        self, host: str, port: int
    ) -> list[tuple[socket.AddressFamily, socket.SocketKind, int, tuple[object, ...]]]:
        """Every address of ``host``, each checked: OutboundRefused when any is refused
        (a name that also points inward is not trusted), OSError when it does not
        resolve."""
        self.check_host(host)
        name = _normal_name(host)
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(
                name, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
        except UnicodeError as exc:  # not a name the resolver can encode (IDNA)
            raise OSError(f"{name!r} is not a resolvable name") from exc
        if not infos:
            raise OSError(f"{name} has no address")
        if not self.name_allowed(host):
            for _family, _type, _proto, _canon, sockaddr in infos:
                self.check_address(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]), name)
        return [
            (family, type_, proto, sockaddr) for family, type_, proto, _canon, sockaddr in infos
        ]

    async def connect(self, host: str, port: int) -> socket.socket:
        """A connected, non-blocking TCP socket to one of ``host``'s checked addresses,
        within ``timeout``. OutboundRefused, or OSError/TimeoutError when none answers."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.timeout):
            addresses = await self.resolve(host, port)
            last: OSError | None = None
            for family, type_, proto, sockaddr in addresses:
                sock = socket.socket(family, type_, proto)
                try:
                    sock.setblocking(False)
                    await loop.sock_connect(sock, sockaddr)
                except OSError as exc:
                    sock.close()
                    last = exc
                    continue
                except BaseException:
                    sock.close()
                    raise
                return sock
        assert last is not None
        raise last


@dataclass(frozen=True, slots=True)
class Destinations:
    """What a change that stores a destination the service will connect to needs: where
    outbound connections may go, and the box its secret is sealed in (a broker's
    connection string, a webhook's header value, a mail server's password)."""

    outbound: Outbound
    box: SecretBox
