"""The service's Prometheus metrics, defined once per process.

They are module-level, as prometheus_client expects: under `cloudadmin serve` every
worker process writes its values to files in PROMETHEUS_MULTIPROC_DIR (set by `serve`
before anything imports prometheus_client, see multiproc.py), and /metrics adds them up
(web/metrics_page.py). Gauges that describe one process (its requests' turns at the pool)
count only live processes (``livesum``): a worker that stops is forgotten.

Every counter shows a sample from the start, 0 until its first event, so that an alert
(``rate(...) > 0``, ``increase(...)``) can be written and tried before anything has
happened: a counter without labels has its sample at once, and a labelled one gets each
label value it can take here, once, when it is defined (``_from_zero``). The request
counter is the exception: its labels are the requests themselves (route, method,
status), so its series appear with them.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# A `_created` series beside every counter doubles what is stored and scraped for a
# figure Prometheus does not need (and multiprocess mode never has).
disable_created_metrics()

# The label values the labelled counters can take. The dispatcher's queues are named
# after the kinds (events/queues.py, AMQP and WEBHOOK), the throttle's limits after
# the limits (auth/throttle.py); tests/web/test_metrics_from_zero.py checks both.
SUBSCRIPTION_KINDS = ("amqp", "webhook")
THROTTLE_LIMITS = ("auth_failures", "api_key")


def _from_zero(counter: Counter, values: Iterable[str]) -> Counter:
    """Makes the counter's series for each label value now, at 0 (one label)."""
    for value in values:
        counter.labels(value)
    return counter


REQUESTS = Counter(
    "cloudadmin_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "cloudadmin_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer, by route template, method and status.",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)

DB_POOL_SIZE = Gauge(
    "cloudadmin_db_pool_size",
    "Database connections requests may hold at once (all processes).",
    multiprocess_mode="livesum",
)
DB_CONNECTIONS_IN_USE = Gauge(
    "cloudadmin_db_pool_connections_in_use",
    "Pooled database connections held by requests now (web/turns.py).",
    multiprocess_mode="livesum",
)
DB_REQUESTS_WAITING = Gauge(
    "cloudadmin_db_pool_requests_waiting",
    "Requests waiting for their turn at the database pool now.",
    multiprocess_mode="livesum",
)

EVENT_DELIVERIES = _from_zero(
    Counter(
        "cloudadmin_event_deliveries",
        "Events delivered to subscribers, by kind of subscription.",
        ["kind"],
    ),
    SUBSCRIPTION_KINDS,
)
EVENT_DELIVERY_FAILURES = _from_zero(
    Counter(
        "cloudadmin_event_delivery_failures",
        "Failed delivery attempts (one per batch that failed), by kind of subscription.",
        ["kind"],
    ),
    SUBSCRIPTION_KINDS,
)
# The dispatcher's watchdog (events/waker.py): per process, the live ones only.
DISPATCHER_ACTIVE = Gauge(
    "cloudadmin_dispatcher_active",
    "Dispatchers running their delivery lanes now (holding their lock, if they need one).",
    multiprocess_mode="livesum",
)
DISPATCHER_LAST_PROGRESS = Gauge(
    "cloudadmin_dispatcher_last_progress_timestamp_seconds",
    "When a dispatcher last finished a delivery pass or saw nothing due (Unix time).",
    multiprocess_mode="livemax",
)
DISPATCHER_STALLED = Gauge(
    "cloudadmin_dispatcher_stalled",
    "Dispatchers that finished no pass for CLOUDADMIN_DISPATCHER_STALL_SECONDS while "
    "events are due.",
    multiprocess_mode="livesum",
)
MAIL_SENT = Counter("cloudadmin_mail_sent", "Notification e-mails sent.")
MAIL_FAILURES = Counter("cloudadmin_mail_failures", "Failed attempts to send an e-mail.")

AUTH_FAILURES = Counter(
    "cloudadmin_auth_failures", "Refused authentications (token_not_valid answers)."
)
THROTTLED = _from_zero(
    Counter(
        "cloudadmin_throttled_requests",
        "Requests answered 429, by the limit they were past.",
        ["limit"],
    ),
    THROTTLE_LIMITS,
)
THROTTLE_UNCHECKED = Counter(
    "cloudadmin_throttle_unchecked",
    "Throttle checks passed without counting: Redis did not answer in time (fail open).",
)
