"""A user's authenticator for two-factor sign-in (TOTP, RFC 6238; docs/portal.md,
"Signing in")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import UTCDateTime, utcnow


class UserTwoFactor(Base):
    """The TOTP secret of a user, encrypted (kit/crypto.py, SecretBox): written when
    the user starts enrolling, confirmed by a first code (``users.two_fa`` is then
    true). ``last_step``: the time step of the last code accepted, so a code is used
    once; a code of that step or an earlier one is refused."""

    __tablename__ = "user_two_factor"

    user_id: Mapped[int] = mapped_column(
        Integer, fk("users.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    secret_encrypted: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_step: Mapped[int | None] = mapped_column(Integer)
    # Wrong codes in a row at the sign-in's second step, and when the last was given:
    # past a limit, no code passes for a while (whoever guesses knows the password, and
    # comes from many addresses, which the failure throttle counts one by one).
    failed_codes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
