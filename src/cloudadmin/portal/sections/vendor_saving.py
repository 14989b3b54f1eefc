"""Saving a vendor settings form (branding, mail server): the whole PUT body of
``/iam/reselling/settings``, checked with the API's schema and replaced by the API's
service, so that each page refuses what the API refuses, with its own fields' messages."""

from __future__ import annotations

from typing import Any

from cloudadmin.iam.reselling.branding import service
from cloudadmin.portal.context import Portal
from cloudadmin.portal.forms import Form, refusals_to
from cloudadmin.portal.sections.vendor_common import destinations, refuse, url_for, validated


async def save(portal: Portal, form: Form, body: dict[str, Any], shown: frozenset[str]) -> None:
    """Replaces the reseller's settings with ``body``; a refusal becomes ``form``'s
    messages (a field ``shown`` does not name: the form's own) and nothing is saved."""
    parsed = validated(body, form, shown)
    if parsed is None:
        return
    with refusals_to(form, lambda error: refuse(form, error, shown)):
        await service.replace(
            portal.db, portal.actor, parsed, destinations(portal), url_for(portal)
        )
