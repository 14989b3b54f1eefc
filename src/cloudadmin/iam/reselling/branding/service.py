"""Branding settings of the caller's reseller account (docs/access.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import Branding, Client, MailMessage
from cloudadmin.db.types import utcnow
from cloudadmin.errors import PermissionDenied, ValidationError
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.events.wakeup import outbox_written
from cloudadmin.iam.reselling.branding import blobs, images, repository
from cloudadmin.iam.reselling.branding.schemas import (
    MAIL_PASSWORD_MASK,
    BrandingSettings,
    BrandingWrite,
    MailServer,
    PrivateSettings,
    PublicSettings,
)
from cloudadmin.kit.outbound import Destinations, OutboundRefused

# Given a stored file name, its public URL.
UrlFor = Callable[[str], str]

_DEFAULT_PUBLIC: dict[str, Any] = {
    "showApiDoc": True,
    "showStatusPage": "true",
    "showKnowledgeBase": True,
    "showTickets": True,
}


async def own_reseller(session: AsyncSession, caller: Caller) -> Client:
    """A reseller's own account; an operator's home account when that is a reseller."""
    if caller.account_type != "reseller":
        raise PermissionDenied("Branding settings belong to a reseller account.")
    reseller = await repository.get_reseller(session, caller.account_id)
    if reseller is None:
        raise PermissionDenied("Branding settings belong to a reseller account.")
    return reseller


def present(reseller_id: int, branding: Branding | None, url_for: UrlFor) -> BrandingSettings:
    stored_public = dict(branding.public_settings or {}) if branding else {}
    public = {**_DEFAULT_PUBLIC, **stored_public}
    public["logo"] = url_for(branding.logo_path) if branding and branding.logo_path else None
    public["favicon"] = (
        url_for(branding.favicon_path) if branding and branding.favicon_path else None
    )
    mail = dict(branding.mail_server or {}) if branding else {}
    has_password = bool(branding and branding.mail_password_encrypted)
    return BrandingSettings(
        domain=branding.domain if branding else "",
        publicSettings=PublicSettings.model_validate(public),
        privateSettings=PrivateSettings(
            mailServer=MailServer(
                tls=bool(mail.get("tls", False)),
                host=mail.get("host"),
                port=None if mail.get("port") is None else str(mail.get("port")),
                login=mail.get("login"),
                password=MAIL_PASSWORD_MASK if has_password else None,
            )
        ),
        reseller=reseller_id,
        deleted=branding.deleted if branding else False,
    )


async def get(session: AsyncSession, caller: Caller, url_for: UrlFor) -> BrandingSettings:
    reseller = await own_reseller(session, caller)
    return present(reseller.id, await repository.get(session, reseller.id), url_for)


async def _record(
    session: AsyncSession, actor: Actor, reseller: Client, action: str, data: dict[str, Any]
) -> None:
    resource = Resource("branding", reseller.id)
    await user_actions.record_change(session, actor, reseller, action, resource, data)


MAIL_HOST_FIELD = "privateSettings.mailServer.host"


async def replace(
    session: AsyncSession,
    actor: Actor,
    body: BrandingWrite,
    to: Destinations,
    url_for: UrlFor,
) -> BrandingSettings:
    reseller = await own_reseller(session, actor.caller)
    mail_host = body.privateSettings.mailServer.host if body.privateSettings.mailServer else None
    if mail_host:
        try:
            to.outbound.check_host(mail_host)
        except OutboundRefused as exc:
            raise ValidationError.field(MAIL_HOST_FIELD, str(exc)) from exc
    branding = await repository.get_or_add(session, reseller.id)
    mail_before = (dict(branding.mail_server or {}), branding.mail_password_encrypted)
    branding.domain = body.domain
    branding.public_settings = body.publicSettings.model_dump(mode="json", exclude_none=True)
    mail = body.privateSettings.mailServer
    if mail is None:
        branding.mail_server = {}
        branding.mail_password_encrypted = None
    else:
        branding.mail_server = mail.model_dump(mode="json", exclude={"password"})
        sent_password = "password" in mail.model_fields_set
        if sent_password and mail.password != MAIL_PASSWORD_MASK:
            sealed = to.box.encrypt(mail.password) if mail.password else None
            branding.mail_password_encrypted = sealed
    if (dict(branding.mail_server or {}), branding.mail_password_encrypted) != mail_before:
        # A repaired mail server is tried at once, not after the old one's backoff.
        await session.execute(
            update(MailMessage)
            .where(MailMessage.reseller_id == reseller.id, MailMessage.sent.is_(False))
            .values(attempts=0, next_attempt_at=utcnow())
        )
        await outbox_written(session)
    await session.flush()
    await _record(session, actor, reseller, "update", body.model_dump(mode="json"))
    return present(reseller.id, branding, url_for)


async def upload(
    session: AsyncSession,
    actor: Actor,
    files: dict[str, bytes],
    directory: Path,
    url_for: UrlFor,
    max_pixels: int,
) -> BrandingSettings:
    """Checks every part first, then stores them; the row points at the stored files."""
    reseller = await own_reseller(session, actor.caller)
    if not files:
        raise ValidationError(
            fields={
                "logo": ["Upload a logo, a favicon or both."],
                "favicon": ["Upload a logo, a favicon or both."],
            }
        )
    checks = {"logo": images.check_logo, "favicon": images.check_favicon}
    checked = {
        part: await asyncio.to_thread(checks[part], data, max_pixels)
        for part, data in files.items()
    }
    branding = await repository.get_or_add(session, reseller.id)
    changes: dict[str, Any] = {}
    for part, image in checked.items():
        name = await asyncio.to_thread(blobs.store, directory, image.data, image.extension)
        setattr(branding, f"{part}_path", name)
        changes[part] = {"name": name, "content_type": image.media_type, "size": len(image.data)}
    await session.flush()
    await _record(session, actor, reseller, "upload", changes)
    return present(reseller.id, branding, url_for)
