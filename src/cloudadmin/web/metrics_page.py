"""GET /metrics: the Prometheus text format.

Counters and histograms come from every process of `serve` (files of the multiprocess
directory) or from this process's memory. What the outbox holds is read from the
database at scrape time: any worker answering a scrape sees the same rows, so those
gauges are not kept per process. (In web/, not observability/: it reads the events'
outbox, and the metrics it adds up are counted by layers below events.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from fastapi import APIRouter
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from cloudadmin.config import Settings
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotAuthenticated, TokenNotValid
from cloudadmin.events.queues import AMQP, WEBHOOK
from cloudadmin.events.status import backlog, mail_counts
from cloudadmin.observability.metrics_access import BEARER_CHALLENGE, Refusal, refusal
from cloudadmin.web.app_state import app_state

log = logging.getLogger("cloudadmin.metrics")

router = APIRouter(tags=["Health"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """No API key: Prometheus scrapes it, with CLOUDADMIN_METRICS_BEARER_TOKEN's token
    when that is set (docs/operations.md). Not an ApiRoute, so no activity-log row
    either."""
    app = request.app
    # Before anything is read: a refused scrape costs no turn at the database.
    why = refusal(
        request.headers.get("authorization"), app_state(app).settings.metrics_bearer_token
    )
    if why is not None:
        refused = NotAuthenticated if why is Refusal.missing else TokenNotValid
        raise refused(headers={"WWW-Authenticate": BEARER_CHALLENGE})
    outbox = await _outbox_families(app)
    directory = app_state(app).settings.prometheus_multiproc_dir
    registry = CollectorRegistry()
    if directory is not None:
        MultiProcessCollector(registry, path=str(directory))
    else:
        registry.register(_Fixed(REGISTRY.collect))
    registry.register(_Fixed(lambda: outbox))
    body = await run_in_threadpool(generate_latest, registry)  # reads files
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class _Fixed:
    """A collector yielding what it is given."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families()


async def _outbox_families(app: Any) -> list[Metric]:
    """The outbox per subscription and the mail outbox, read from the database on the
    read pool, taking a turn like any request. A database that does not answer leaves
    them out: the process's own metrics still answer."""
    pending = GaugeMetricFamily(
        "cloudadmin_outbox_pending",
        "Events not yet delivered, per subscription.",
        labels=["kind", "subscription"],
    )
    oldest = GaugeMetricFamily(
        "cloudadmin_outbox_oldest_pending_age_seconds",
        "Age of the oldest event not yet delivered, per subscription (0 when none).",
        labels=["kind", "subscription"],
    )
    mail = GaugeMetricFamily(
        "cloudadmin_mail_outbox", "E-mails in the mail outbox, by state.", labels=["state"]
    )
    try:
        async with app_state(app).turns.turn(), app_state(app).read_engine.connect() as conn:
            queues = [(q.name, await backlog(conn, q)) for q in (AMQP, WEBHOOK)]
            counts = await mail_counts(conn)
    except Exception as exc:
        log.warning("metrics: the outbox could not be read: %s", exc)
        return []
    now = utcnow()
    for kind, rows in queues:
        for sid, count, since in rows:
            pending.add_metric([kind, str(sid)], count)
            oldest.add_metric([kind, str(sid)], _age(now, since))
    for state in ("pending", "failing", "sent"):
        mail.add_metric([state], counts[state])
    return [pending, oldest, mail]


def _age(now: datetime, since: datetime | None) -> float:
    return max((now - since).total_seconds(), 0.0) if since is not None else 0.0


def forget_this_process(settings: Settings) -> None:
    """At a worker's shutdown: its per-process gauges (``live*`` modes) stop counting."""
    if settings.prometheus_multiproc_dir is not None:
        mark_process_dead(os.getpid(), str(settings.prometheus_multiproc_dir))
