"""Reusing the routing of an application made for an earlier test.

FastAPI 0.165 builds a route's request handling (its dependencies' and models' validators)
in each application that includes it, on the application's first request to the route's
router: with an application per test, that building cost a third of a simple test's time.
An application depends on its settings only through its state (web/app_state.py) and a
few values read when it is made (the middleware's limits, the trusted proxies, whether
/metrics is served); so a test whose settings differ from an earlier test's only in their
data directory gets that earlier application, with the state just made for it installed.
Everything a request may change or that is bound to the test's event loop (the throttle,
the turns, the outbound client) is that fresh state's. An application a test added routes
to is not given again (its OpenAPI document may list them too).

The engine is kept the same way (:func:`kept_engine`): SQLAlchemy compiles a statement
once per engine, and a new engine per test compiled everything a test sent again (the
landscape fixture: 14 ms with a new engine, 6 ms with a kept one), and so are its pooled
connections: the tests of a process share one event loop (pyproject.toml), and opening
the connections again in each test was a fifth of a simple test's time. A test that kills
the database's connections leaves no dead one to the next: SQLAlchemy recycles every
connection of a pool older than the first one found dead.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.web.app_state import app_state

# A test's own data directory: left out of the comparison of settings.
_ANY_DATA_DIR = Path("data-dir-of-each-test")
# The applications made in this process: their settings less the data directory, and
# their number of routes when made.
_made: list[tuple[Settings, FastAPI, int]] = []
# The engines made in this process, by their settings less the data directory.
_engines: list[tuple[Settings, AsyncEngine]] = []


def _without_data_dir(settings: Settings) -> Settings:
    return settings.model_copy(update={"data_dir": _ANY_DATA_DIR})


def kept_engine(settings: Settings) -> AsyncEngine:
    """The engine made for an earlier test with the same settings but for the data
    directory, or a new one kept for the next."""
    key = _without_data_dir(settings)
    for made_from, engine in _engines:
        if made_from == key:
            return engine
    engine = create_engine(settings)
    _engines.append((key, engine))
    return engine


def routed_app(fresh: FastAPI, settings: Settings) -> FastAPI:
    """``fresh`` (just made from ``settings``), or the earlier application made from the
    same settings but for the data directory, now holding ``fresh``'s state."""
    key = _without_data_dir(settings)
    for made in _made:
        made_from, application, routes = made
        if made_from != key:
            continue
        if len(application.routes) != routes:  # a test added its own
            _made.remove(made)
            break
        app_state(fresh).install(application)
        return application
    _made.append((key, fresh, len(fresh.routes)))
    return fresh
