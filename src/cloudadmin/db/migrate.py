"""Running Alembic from code (the CLI and the tests)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config


def alembic_config(url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", "cloudadmin:migrations")
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str | None = None, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)
