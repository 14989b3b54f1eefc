"""The ASGI application."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.telemetry import TelemetryConfig
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin import __version__
from cloudadmin.auth.throttle import Throttle
from cloudadmin.billing.reports.runner import run_report_jobs
from cloudadmin.billing.routes import routers as billing_routers
from cloudadmin.cloud.routes import routers as cloud_routers
from cloudadmin.cloud.tasks.runner import settle_stranded
from cloudadmin.config import Settings, get_settings
from cloudadmin.db.engine import (
    autocommit_engine,
    create_engine,
    create_read_sessionmaker,
    create_sessionmaker,
)
from cloudadmin.errors import ApiError, ServiceUnavailable
from cloudadmin.events import mail
from cloudadmin.iam.activity_log import recorder
from cloudadmin.iam.reselling.branding import images
from cloudadmin.iam.routes import routers as iam_routers
from cloudadmin.kit import crypto
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.observability.metrics import DB_POOL_SIZE
from cloudadmin.observability.request_observer import ObserveMiddleware
from cloudadmin.portal import routes as portal
from cloudadmin.web import docs_pages, metrics_page, route_index
from cloudadmin.web.app_state import AppState, app_state
from cloudadmin.web.context import RequestContextMiddleware
from cloudadmin.web.error_render import render, render_exception
from cloudadmin.web.openapi import add_api_key_security, add_error_schema
from cloudadmin.web.operation_ids import operation_id
from cloudadmin.web.proxies import TrustedProxyMiddleware
from cloudadmin.web.turns import Turns

API_ROUTERS = [*iam_routers, *billing_routers, *cloud_routers]

health = APIRouter(tags=["Health"], generate_unique_id_function=operation_id)


@health.get("/healthz", summary="The process is up", include_in_schema=True)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.head("/healthz", include_in_schema=False)
async def healthz_head() -> Response:
    return Response(status_code=200)


async def _database_answers(request: Request) -> bool:
    try:
        async with app_state(request.app).engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception:
        return False
    return True


@health.get("/readyz", summary="The database answers")
async def readyz(request: Request) -> Any:
    if not await _database_answers(request):
        return render(request, ServiceUnavailable("The database is unreachable."))
    return {"status": "ready"}


@health.head("/readyz", include_in_schema=False)
async def readyz_head(request: Request) -> Response:
    """The answer of GET without its body (load balancers probe with HEAD)."""
    if not await _database_answers(request):
        unavailable = ServiceUnavailable("The database is unreachable.")
        return Response(status_code=unavailable.status_code, headers=unavailable.headers)
    return Response(status_code=200)


@asynccontextmanager
async def run_dispatcher_beside(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    """Runs the events dispatcher in this process for as long as the app serves."""
    if not settings.run_dispatcher:
        yield
        return
    from cloudadmin.events.dispatcher import Dispatcher
    from cloudadmin.events.worker import (
        DISPOSE_SECONDS,
        UNWIND_SECONDS,
        dispatcher_settings,
        dispose_within,
        ended_within,
    )

    # Its own engine and pool: deliveries never wait behind requests for a connection,
    # and requests take their turns (web/turns.py) on a pool only they use.
    engine = create_engine(dispatcher_settings(settings))
    dispatcher = Dispatcher(
        engine,
        app_state(app).secret_box,
        lanes=settings.dispatcher_lanes,
        poll_seconds=settings.dispatcher_poll_seconds,
        lease_seconds=settings.dispatcher_lease_seconds,
        batch_size=settings.dispatcher_batch_size,
        platform_mail=mail.PlatformMailServer.from_settings(settings),
        outbound=app_state(app).outbound,
        idle_poll_seconds=settings.dispatcher_idle_poll_seconds,
        idle_backoff_max_seconds=settings.dispatcher_idle_backoff_max_seconds,
        # `serve --workers N` runs N of these: one dispatches, the others stand by.
        exclusive=True,
        stall_seconds=settings.dispatcher_stall_seconds,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(stop))
    # The monthly reports' job, beside the dispatcher (each process of `serve` runs one).
    reports = asyncio.create_task(run_report_jobs(engine, stop))
    try:
        yield
    finally:
        stop.set()
        # Bounded whatever the dispatcher is doing: SIGTERM ends `serve` (events/worker.py).
        # The requests have had the grace already; the dispatcher cancels its lanes at the
        # stop and needs only to close in order.
        await ended_within(task, min(settings.shutdown_grace_seconds, UNWIND_SECONDS))
        await ended_within(reports, min(settings.shutdown_grace_seconds, UNWIND_SECONDS))
        await dispose_within(engine, DISPOSE_SECONDS)


# What a step of the shutdown may take at most.
SHUTDOWN_STEP_SECONDS = 2.0


async def _within(step: Awaitable[None], what: str) -> None:
    try:
        await asyncio.wait_for(step, SHUTDOWN_STEP_SECONDS)
    except Exception as exc:
        logging.getLogger("cloudadmin.app").warning(
            "shutdown: %s failed or took over %g s (%s)",
            what,
            SHUTDOWN_STEP_SECONDS,
            type(exc).__name__,
        )


# FastAPI's own OpenTelemetry, off: it would configure exporters from OTEL_* variables
# (Settings is the service's only configuration, and its outbound connections go through
# CLOUDADMIN_OUTBOUND_ALLOW), and its check for a configured provider on every request was
# 1.7 % of a list request's samples (py-spy). The service's metrics are its own (/metrics).
NO_TELEMETRY: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "auto_configure": False,
}


def create_app(settings: Settings | None = None, *, engine: AsyncEngine | None = None) -> FastAPI:
    """The application. ``engine``, when given, is one made by ``create_engine(settings)``
    that the caller keeps beyond this application (its shutdown disposes of the pool's
    connections, not of the engine): an engine compiles each statement once, and the
    tests, which make an application per test, keep one engine per database.
    """
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # What is alive now (modules, the app, its routes) lives as long as the process:
        # keep it out of the garbage collector's full passes (measured: a quarter less
        # time collecting on the list endpoint).
        gc.freeze()
        # A task a stopped process left RUNNING is finished (or marked ERROR) now rather
        # than when its lease passes; never raises (docs/cloud.md, "Tasks").
        await settle_stranded(app_state(app).sessionmaker, None)
        async with run_dispatcher_beside(app, settings):
            yield
        # Each step bounded: a database that stopped answering must not keep SIGTERM
        # from ending `serve` (the rows of reads still waiting are then lost, logged).
        await _within(app_state(app).request_log.close(), "writing the activity log")
        await app_state(app).throttle.close()
        await _within(app_state(app).engine.dispose(), "closing the database connections")
        metrics_page.forget_this_process(settings)

    app = FastAPI(
        title="cloudadmin",
        version=__version__,
        description="Account, Billing and Cloud Administration API.",
        lifespan=lifespan,
        # /docs and /redoc are docs_pages' own, with no asset from outside the service.
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=operation_id,
        telemetry=NO_TELEMETRY,
    )
    engine = engine or create_engine(settings)
    read_engine = autocommit_engine(engine)
    sessionmaker = create_sessionmaker(engine)
    AppState(
        settings=settings,
        engine=engine,
        sessionmaker=sessionmaker,
        read_engine=read_engine,
        read_sessionmaker=create_read_sessionmaker(read_engine),
        turns=Turns(settings.db_pool_size, settings.db_pool_timeout),
        throttle=Throttle.from_settings(settings),
        secret_box=SecretBox(*settings.secret_keys()),
        outbound=Outbound.from_settings(settings),
        request_log=recorder.RequestRecorder(
            read_engine, settings.activity_log_read_batch_ms / 1000
        ),
        note_failed_login=partial(mail.note_failed_login, sessionmaker),
    ).install(app)
    DB_POOL_SIZE.set(settings.db_pool_size)
    images.limit_pillow(settings.max_image_pixels)
    crypto.configure_password_hashing(
        settings.password_hash_time_cost, settings.password_hash_memory_kib
    )

    # Every router's routes go straight into the application's route table, not through
    # include_router: FastAPI looks past an included router's routes through contexts
    # of its own, about 3 µs a route: 160 µs to reach the addendum list behind 45
    # routes, 67 µs straight in (docs/performance.md, "The list's request path"). Each
    # route already holds what its router gave it (tags, dependencies, route class,
    # operation id).
    routers = [health, metrics_page.router] if settings.metrics_enabled else [health]
    for router in [*routers, docs_pages.router, portal.router, *API_ROUTERS]:
        app.router.routes.extend(router.routes)
    app.mount(docs_pages.ASSETS_PATH, docs_pages.assets(), name="docs-assets")
    app.mount(portal.STATIC_PATH, portal.static_files(), name="portal-static")
    app.router.routes.extend(portal.fallback_routes)
    route_index.install(app.router)

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return render_exception(request, exc)

    app.add_exception_handler(ApiError, handle)
    app.add_exception_handler(RequestValidationError, handle)
    app.add_exception_handler(StarletteHTTPException, handle)
    app.add_exception_handler(Exception, handle)
    app.add_middleware(
        RequestContextMiddleware,
        json_limit=settings.max_json_body_bytes,
        upload_limit=settings.max_upload_body_bytes,
    )
    # Sees every request end, a 413 of the middleware above included (its metrics and
    # access-log line), with the client address the proxies middleware settled.
    app.add_middleware(ObserveMiddleware)
    # Outside the body limit, whose 413 under /portal gets the portal's headers too.
    app.add_middleware(portal.PortalHeadersMiddleware)
    app.add_middleware(TrustedProxyMiddleware, trusted=settings.trusted_proxies)  # outermost

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema = add_error_schema(add_api_key_security(schema, app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
