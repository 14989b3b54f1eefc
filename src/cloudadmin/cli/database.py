"""Where a command starts: the settings, checked, and its database reached (made and
migrated, or required to have this version's schema)."""

from __future__ import annotations

from cloudadmin.cli.output import say
from cloudadmin.config import Settings


def checked_settings(
    *, wait: bool = False, create: bool = False, announce: bool = True
) -> Settings:
    """The settings, checked, and the database reached once (startup.py); with ``wait``
    (serve, worker, migrate) a database that is not up yet is waited for. Only with
    ``create`` (migrate, load, serve) may a SQLite file that is not there be made.
    With ``announce``, the database is then named on stderr, its password masked."""
    from cloudadmin.startup import load_settings, preflight

    settings = load_settings()
    preflight(
        settings,
        wait_seconds=settings.database_wait_seconds if wait else 0,
        report=lambda line: say(line, level="warning"),
        create=create,
    )
    if announce:
        say(f"database: {describe(settings)}")
    return settings


def migrate(settings: Settings) -> None:
    from cloudadmin.startup import migrate

    migrate(settings)


def migrated_settings(*, wait: bool = False) -> Settings:
    """The settings, checked (``checked_settings``), of a database (made if need be) whose
    schema is now up to date: where migrate and load start."""
    settings = checked_settings(wait=wait, create=True)
    migrate(settings)
    return settings


def ready_settings(*, wait: bool = False) -> Settings:
    """The settings, checked, of a database that exists and has this version's schema:
    where every other command starts. It never makes a database, nor migrates one."""
    from cloudadmin.startup import require_schema

    settings = checked_settings(wait=wait)
    require_schema(settings)
    return settings


def describe(settings: Settings) -> str:
    from cloudadmin.startup import describe_url

    return describe_url(settings.effective_database_url)
