"""Idempotency keys: the first answer to a creating POST, replayed to its retries."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import GivenIntKey, Str255


class IdempotencyKey(Base):
    """One ``Idempotency-Key`` of one account (web/idempotency.py, docs/errors.md).

    ``status_code`` is null while the first request runs (a claim); the request's own
    transaction then stores its answer here, with its change. ``claim`` names the
    request holding the key, so that one which lost it (taken over after the lease)
    cannot store or release another's. No foreign key: like the activity log, a key
    never blocks anything, and expired ones are purged by created_at.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    account_id: Mapped[GivenIntKey]
    idempotency_key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # SHA-256 (hex) of the caller, method, path, query and body.
    request_hash: Mapped[str] = mapped_column(String(64))
    claim: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime]
    status_code: Mapped[int | None]
    content_type: Mapped[Str255 | None]
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
