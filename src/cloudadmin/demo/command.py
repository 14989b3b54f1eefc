"""`cloudadmin serve --demo`: the steps around the demo's database, and what it prints.

The command line (cli.py) calls `prepare_demo` before the schema is migrated and
`load_demo` after; the rules themselves are in demo/instance.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

import typer
from sqlalchemy.engine import make_url

from cloudadmin.config import LogFormat, Settings, get_settings
from cloudadmin.db.engine import create_engine
from cloudadmin.demo.history import CloudExample, local_base, start_history
from cloudadmin.demo.instance import DemoRefused, DemoStart, check_database, start_demo
from cloudadmin.demo.landscape import PASSWORD, PORTAL_PEOPLE
from cloudadmin.demo.local_services import (
    LocalServices,
    amqp_address,
    find_local_services,
    smtp_address,
)
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.logs import command_line

T = TypeVar("T")

DEMO_OUTBOUND_ALLOW = "127.0.0.0/8,::1"


def _echo(settings: Settings, message: str, *, err: bool = False, level: str = "info") -> None:
    """A line of the demo's (its steps, its keys), in the log format: with
    CLOUDADMIN_LOG_FORMAT=json every line serve writes is JSON, the banner's too."""
    typer.echo(command_line(settings.log_format, message, level=level), err=err)


def prepare_demo(settings: Settings) -> Settings:
    """The demo's settings (its own database file, loopback allowed), after refusing a
    database that holds somebody else's data, before anything is written to it."""
    demo_environment(settings)
    settings = get_settings()
    if settings.uses_embedded_default:
        settings.ensure_data_dir()
    _run_demo_step(settings, _check_demo_database(settings))
    return settings


def demo_environment(settings: Settings) -> None:
    """The app is built from the settings anew (by uvicorn, in this process or in worker
    processes), so what the demo changes goes where they are read from.

    CLOUDADMIN_DEMO: the embedded default database is demo.db, not the user's own
    cloudadmin.db (an explicit CLOUDADMIN_DATABASE_URL is kept). The demo's brokers and
    mail servers are on this machine, which the service refuses by default: unless
    CLOUDADMIN_OUTBOUND_ALLOW is set, the demo allows loopback."""
    os.environ["CLOUDADMIN_DEMO"] = "true"
    if not settings.outbound_allow:
        os.environ["CLOUDADMIN_OUTBOUND_ALLOW"] = DEMO_OUTBOUND_ALLOW
        _echo(
            settings,
            f"demo: connections to loopback allowed (CLOUDADMIN_OUTBOUND_ALLOW="
            f"{DEMO_OUTBOUND_ALLOW})",
            err=True,
        )
    get_settings.cache_clear()


def _run_demo_step(settings: Settings, step: Coroutine[Any, Any, T]) -> T:
    """Runs a demo step; a refusal is one line on stderr and exit status 1."""
    try:
        return asyncio.run(step)
    except DemoRefused as exc:
        text = str(exc) if settings.log_format is LogFormat.json else f"error: {exc}"
        _echo(settings, text, err=True, level="error")
        raise typer.Exit(1) from None


async def _check_demo_database(settings: Settings) -> None:
    engine = create_engine(settings)
    try:
        await check_database(engine, _describe(settings))
    finally:
        await engine.dispose()


def load_demo(settings: Settings, host: str, port: int, *, reset: bool) -> None:
    """After migrating: seed (the first time, or anew with ``reset``) or keep, then print
    one key per kind of caller (two fields a line: bench/fuzz.py reads them)."""

    async def run() -> DemoStart:
        engine = create_engine(settings)
        try:
            return await start_demo(
                engine,
                SecretBox(*settings.secret_keys()),
                _describe(settings),
                reset=reset,
                probe=lambda: find_local_services(settings),
            )
        finally:
            await engine.dispose()

    started = _run_demo_step(settings, run())
    if started.services is not None:
        _echo_local_services(settings, started.services)
        _echo(settings, "demo landscape loaded; one API key per kind of caller:")
    else:
        _echo(
            settings,
            f"demo landscape kept as it is (seeded {started.made_at:%Y-%m-%d %H:%M} "
            "UTC; --reset starts over); one API key per kind of caller:",
        )
    keys = started.keys
    width = max(len(kind) for kind in keys)
    for kind, token in keys.items():
        note = "  (no longer valid: revoked or expired)" if kind in started.invalid else ""
        _echo(settings, f"  {kind:<{width}}  {token}{note}")
    _echo_portal(settings, host, port)
    some = keys.get("reseller") or next(iter(keys.values()))
    _echo(
        settings,
        f"try: curl -H 'Authorization: apikey {some}' "
        f"http://{host}:{port}/iam/activity_log/requests",
    )
    if started.example is not None and "client_admin" in keys:
        _echo_cloud(settings, started.example, keys["client_admin"], host, port)
    if started.services is not None:
        # Seeded now: a few requests of its own once the server answers, so that the
        # activity log above is not empty (demo/history.py).
        start_history(host, port, keys, started.example)


def _echo_portal(settings: Settings, host: str, port: int) -> None:
    """The Admin Portal's address, and one e-mail address and password per kind of person
    (as seeded: the portal or the API may have changed a password since). Each line
    starts with "portal:", so that no reader of the keys above takes one for a key."""
    _echo(
        settings,
        f"portal: the Admin Portal is at {local_base(host, port)}/portal/ ; sign in with "
        "one of these e-mail addresses and passwords:",
    )
    width = max(len(kind) for kind in PORTAL_PEOPLE)
    email_width = max(len(email) for email in PORTAL_PEOPLE.values())
    for kind, email in PORTAL_PEOPLE.items():
        note = "  (the portal is not for client accounts)" if kind == "client user" else ""
        _echo(settings, f"portal:   {kind:<{width}}  {email:<{email_width}}  {PASSWORD}{note}")


def _echo_cloud(
    settings: Settings, example: CloudExample, token: str, host: str, port: int
) -> None:
    """The cloud side: the project and region of the client's resources, and one read."""
    _echo(
        settings,
        f"cloud: client {example.client_id}'s project {example.project_id}, region "
        f"{example.region_id}; its listener {example.name}, as the client's administrator:",
    )
    _echo(
        settings, f"try: curl -H 'Authorization: apikey {token}' http://{host}:{port}{example.path}"
    )


def _echo_local_services(settings: Settings, services: LocalServices) -> None:
    amqp_host, amqp_port = amqp_address(settings.demo_amqp_url)
    if services.amqp_url:
        _echo(
            settings,
            f"demo: client 2001's AMQP subscription publishes to the broker at "
            f"{amqp_host}:{amqp_port} (exchange amq.topic, routing key cloudadmin)",
            err=True,
        )
    else:
        _echo(
            settings,
            f"demo: no broker at {amqp_host}:{amqp_port}: no AMQP subscription "
            "(CLOUDADMIN_DEMO_AMQP_URL)",
            err=True,
        )
    smtp_host, smtp_port = smtp_address(settings.demo_smtp_server)
    if services.smtp:
        _echo(
            settings,
            f"demo: the reseller's mail goes to the SMTP server at {smtp_host}:{smtp_port}",
            err=True,
        )
    else:
        _echo(
            settings,
            f"demo: no SMTP server at {smtp_host}:{smtp_port}: the reseller has no "
            "mail server (CLOUDADMIN_DEMO_SMTP_SERVER)",
            err=True,
        )


def _describe(settings: Settings) -> str:
    return make_url(settings.effective_database_url).render_as_string(hide_password=True)
