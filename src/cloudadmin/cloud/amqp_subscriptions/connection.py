"""Validation of AMQP connection strings at the API: the one parser (kit/amqp_url.py)
plus the outbound policy, and the password mask of answers."""

from __future__ import annotations

from cloudadmin.errors import ValidationError
from cloudadmin.kit.amqp_url import host_and_port, problems_of
from cloudadmin.kit.outbound import Outbound, OutboundRefused
from cloudadmin.kit.redact import MASK, password_span


def validated(value: str, field: str = "connection_string") -> str:
    """``value`` unchanged, or a 400 naming ``field`` with every problem found."""
    found = problems_of(value)
    if found:
        raise ValidationError(fields={field: found})
    return value


# ---- of a valid connection string ------------------------------------------------


def has_masked_password(value: str) -> bool:
    """The password is the mask the API answers with (``user:***@``)."""
    span = password_span(value)
    return span is not None and value[span[0] : span[1]] == MASK


def with_password_of(value: str, stored: str) -> str:
    """``value`` with the password of ``stored`` in place of its own (both valid)."""
    mine, theirs = password_span(value), password_span(stored)
    assert mine is not None and theirs is not None
    return value[: mine[0]] + stored[theirs[0] : theirs[1]] + value[mine[1] :]


def check_destination(value: str, outbound: Outbound, field: str = "connection_string") -> None:
    """A 400 naming ``field`` when the broker's address is not allowed (what can be told
    without DNS; names are checked again, resolved, each time the service connects)."""
    host, _port = host_and_port(value)
    try:
        outbound.check_host(host)
    except OutboundRefused as exc:
        raise ValidationError.field(field, str(exc)) from exc
