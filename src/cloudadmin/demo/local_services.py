"""Finding a broker and a mail server on this machine for the demo to point at.

The demo's AMQP subscription and mail server used to name hosts that do not resolve,
so every delivery failed and the log filled with the failures forever. Now they point
at what listens where the settings say (a local RabbitMQ, a local SMTP catcher), found
with one short TCP connect each when the demo seeds, or at nothing.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from cloudadmin.config import Settings

# A local service answers a connect at once; a port that takes longer is as good as
# absent for a demo, and the start must not wait on it.
PROBE_SECONDS = 0.5


@dataclass(frozen=True)
class LocalServices:
    """What the demo's destinations point at; None: nothing listens there."""

    amqp_url: str | None
    smtp: tuple[str, int] | None


def listening(host: str, port: int, timeout: float = PROBE_SECONDS) -> bool:
    try:
        with socket.create_connection((host, port), timeout):
            return True
    except OSError:
        return False


def amqp_address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    default = 5671 if parts.scheme.lower() == "amqps" else 5672
    return parts.hostname or "127.0.0.1", parts.port or default


def smtp_address(value: str) -> tuple[str, int]:
    """``host:port`` (an IPv6 address in brackets); the port defaults to 25."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
        host, port = value, "25"
    return host.strip("[]"), int(port)


def find_local_services(settings: Settings) -> LocalServices:
    amqp_url = settings.demo_amqp_url if listening(*amqp_address(settings.demo_amqp_url)) else None
    smtp = smtp_address(settings.demo_smtp_server)
    return LocalServices(amqp_url=amqp_url, smtp=smtp if listening(*smtp) else None)
