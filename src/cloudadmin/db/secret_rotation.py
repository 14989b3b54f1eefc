"""Re-encrypting every stored secret under the current secret key
(`cloudadmin rotate-secrets`; docs/operations.md, "Rotating the secret key").

Each kind of secret is one column of one table. Its rows are walked in key order, a
batch at a time, each batch in a short transaction of its own: a run that is cut off
has committed what it did, and the next run finds those rows under the current key
and leaves them as they are. A row is written back only if its secret is still the
one read (a change through the API meanwhile has written it under the current key
already); nothing here ever holds a secret longer than its re-encryption.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, Table, and_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cloudadmin.db.base import Base
from cloudadmin.db.models import AmqpSubscription, Branding, WebhookSubscription
from cloudadmin.db.models.events import MailMessage
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.models.instance import InstanceMark
from cloudadmin.db.models.two_factor import UserTwoFactor
from cloudadmin.kit.crypto import SecretBox

BATCH_SIZE = 200
# An idempotent request's stored answer is sealed behind this prefix
# (web/idempotency.py); other stored answers are not secret.
_SEALED = b"sealed:"


@dataclass(frozen=True, slots=True)
class SecretKind:
    """One encrypted column: its table, its primary key, and how its stored value
    holds the Fernet token (``token``) and is made again around a new one (``store``)."""

    name: str
    table: Table
    value: str
    token: Callable[[object], str | None] = lambda value: value if isinstance(value, str) else None
    store: Callable[[str], object] = lambda token: token

    @property
    def key(self) -> Sequence[Column[object]]:
        return list(self.table.primary_key.columns)


# A Fernet token starts so (its version byte, 0x80, in URL-safe base64). Of the mails
# waiting in the outbox only the sealed kinds (events/mail.py, SEALED_KINDS: the
# invitation's set-password link, a password reset's) are stored encrypted; the others
# are plain text, which never starts with it.
_FERNET = "gAAAAA"


def _sealed_mail(value: object) -> str | None:
    return value if isinstance(value, str) and value.startswith(_FERNET) else None


def _sealed_token(value: object) -> str | None:
    if isinstance(value, bytes) and value.startswith(_SEALED):
        return value[len(_SEALED) :].decode()
    return None


def _kind(name: str, model: type[Base], value: str, **how: Any) -> SecretKind:
    return SecretKind(name, model.__table__, value, **how)  # type: ignore[arg-type]


KINDS: tuple[SecretKind, ...] = (
    _kind("amqp subscription connection strings", AmqpSubscription, "connection_string_encrypted"),
    _kind("webhook authorization headers", WebhookSubscription, "auth_header_value_encrypted"),
    _kind("branding mail server passwords", Branding, "mail_password_encrypted"),
    _kind(
        "idempotent answers",
        IdempotencyKey,
        "body",
        token=_sealed_token,
        store=lambda token: _SEALED + token.encode(),
    ),
    _kind("unsent mails holding a link", MailMessage, "body", token=_sealed_mail),
    _kind("two-factor sign-in secrets", UserTwoFactor, "secret_encrypted"),
    _kind("instance marks", InstanceMark, "value"),
)


@dataclass(slots=True)
class KindReport:
    """What a run did to one kind: rows re-encrypted, rows under the current key
    already, rows no key decrypts (left as they are), rows changed meanwhile."""

    name: str
    rotated: int = 0
    current: int = 0
    undecryptable: int = 0
    changed: int = 0
    undecryptable_keys: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = (
            f"{self.name}: {self.rotated} re-encrypted, {self.current} already under "
            f"the current key"
        )
        if self.changed:
            text += f", {self.changed} changed meanwhile (under the current key)"
        if self.undecryptable:
            text += (
                f", {self.undecryptable} not decryptable with any key "
                f"(rows {', '.join(self.undecryptable_keys)})"
            )
        return text


async def rotate_secrets(
    engine: AsyncEngine,
    box: SecretBox,
    *,
    batch_size: int = BATCH_SIZE,
    kinds: Sequence[SecretKind] = KINDS,
    after_batch: Callable[[str, int], None] | None = None,
) -> list[KindReport]:
    """Re-encrypts every stored secret of ``kinds`` under ``box``'s current key; one
    report per kind. ``after_batch(kind, rows)`` is called after each committed batch."""
    reports = []
    for kind in kinds:
        report = KindReport(kind.name)
        last: tuple[object, ...] | None = None
        while True:
            async with engine.begin() as conn:
                key = tuple_(*kind.key)
                query = select(*kind.key, kind.table.c[kind.value]).order_by(*kind.key)
                if last is not None:
                    query = query.where(key > tuple_(*last))
                rows = (await conn.execute(query.limit(batch_size))).all()
                for row in rows:
                    ident = tuple(row[:-1])
                    stored = row[-1]
                    await _rotate_one(conn, kind, box, ident, stored, report)
            if not rows:
                break
            last = tuple(rows[-1][:-1])
            if after_batch is not None:
                after_batch(kind.name, len(rows))
        reports.append(report)
    return reports


async def _rotate_one(
    conn: AsyncConnection,
    kind: SecretKind,
    box: SecretBox,
    ident: tuple[object, ...],
    stored: object,
    report: KindReport,
) -> None:
    token = kind.token(stored)
    if token is None:  # no secret in this row (no password, an answer not sealed)
        return
    if box.is_current(token):
        report.current += 1
        return
    try:
        fresh = box.rotate(token)
    except ValueError:
        report.undecryptable += 1
        report.undecryptable_keys.append("/".join(map(str, ident)))
        return
    column = kind.table.c[kind.value]
    matches = and_(*(col == value for col, value in zip(kind.key, ident, strict=True)))
    done = await conn.execute(
        update(kind.table).where(matches, column == stored).values({kind.value: kind.store(fresh)})
    )
    if done.rowcount == 1:
        report.rotated += 1
    else:  # written meanwhile, by a change that encrypts under the current key
        report.changed += 1
