"""Facts about the database itself (not about any account)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import LongText, UTCDateTime, utcnow


class InstanceMark(Base):
    """One named fact about this database.

    ``demo``: the database was made by `serve --demo`; its value is the demo's API keys
    (``{kind: token}`` as JSON), encrypted with the secret box, so that later starts can
    print them again while the api_keys table keeps only their hashes (demo/instance.py).
    """

    __tablename__ = "instance_marks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[LongText]
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
