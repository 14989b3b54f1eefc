"""The one settings object. Nothing else in the code reads the environment."""

from __future__ import annotations

import os
import secrets
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "cloudadmin"


# The plain URL forms people write, mapped to the async drivers the service uses.
_PLAIN_SCHEMES = {
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}


def async_database_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` as ``postgresql+asyncpg://``, ``sqlite://`` as
    ``sqlite+aiosqlite://``; any other URL as it is (a driver named explicitly is kept,
    and refused at start when it is not one of those two)."""
    scheme, sep, rest = url.partition("://")
    target = _PLAIN_SCHEMES.get(scheme.lower()) if sep else None
    return f"{target}://{rest}" if target else url


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class Settings(BaseSettings):
    """Typed configuration, read from ``CLOUDADMIN_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="CLOUDADMIN_", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None
    secret_key: SecretStr | None = None
    # Keys that encrypted stored secrets before CLOUDADMIN_SECRET_KEY, comma-separated:
    # still tried for decryption, never used to encrypt; `cloudadmin rotate-secrets`
    # moves every stored secret to the current key (docs/operations.md).
    secret_keys_old: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    log_level: str = "INFO"
    log_format: LogFormat = LogFormat.text
    max_json_body_bytes: int = 1024 * 1024
    # Arrays and objects of a JSON body may nest this deep; deeper is a 400 before the
    # body is parsed (the JSON parser and the body's validation recurse per level).
    max_json_depth: int = Field(default=64, ge=2, le=256)
    max_upload_body_bytes: int = 6 * 1024 * 1024
    db_pool_size: int = 10
    # Seconds a request waits for a pooled connection before it answers 503.
    db_pool_timeout: float = 30.0
    # Test each pooled connection with a round trip before use. Off: a connection found
    # dead invalidates the pool; a read is retried once, a write answers 503.
    db_pre_ping: bool = False
    # PostgreSQL: milliseconds a read's activity-log row may wait in its process to be
    # written with the other reads' rows of that moment, in one transaction
    # (docs/activity-log.md, "Durability"); 0 writes each row with its request.
    activity_log_read_batch_ms: int = Field(default=20, ge=0, le=1000)
    # argon2id cost of new password hashes (RFC 9106's second recommendation by default).
    password_hash_time_cost: int = Field(default=3, ge=1, le=20)
    password_hash_memory_kib: int = Field(default=65_536, ge=64, le=4_194_304)
    # Uploaded branding files; default <data_dir>/blobs. Several machines must share it
    # (a network file system), like they share the database.
    blob_dir: Path | None = None
    # A prices file (`prices` records of the load format, docs/import.md) loaded into the
    # catalogue at start.
    prices_file: Path | None = None
    # The events dispatcher runs inside `serve` unless turned off (then run `worker`s).
    run_dispatcher: bool = True
    dispatcher_lanes: int = Field(default=8, ge=1, le=64)
    dispatcher_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    # A claimed subscription is held this long; a batch must finish well within it.
    dispatcher_lease_seconds: float = Field(default=60, ge=1, le=3600)
    dispatcher_batch_size: int = Field(default=200, ge=1, le=10_000)
    # Extra fields accepted by `cloudadmin load` beyond the contract: none by default.

    # --- Hardening (docs/configuration.md) ---
    # Seconds a request body may take to arrive in full; then 408.
    body_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    # Seconds a request head (request line and headers) may take to arrive, from the
    # connection's start or the previous response; then `serve` closes the connection.
    request_head_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    # Failed authentications allowed per client address (a `limits` rate string); past
    # it, 429 with Retry-After before any database work.
    auth_failure_limit: str = "20/minute"
    # Requests allowed per API key (a `limits` rate string, e.g. "600/minute"); off when
    # empty.
    key_rate_limit: str | None = None
    # Shared state of the limiters (redis://host:port/db); in process memory when unset.
    redis_url: str | None = None
    # Milliseconds a throttle check may wait for Redis (connect and answer); past it, or
    # when Redis fails, the check passes uncounted (fails open) and Redis is asked again
    # a second later. It is asked on every request: keep it to tens of milliseconds.
    redis_timeout_ms: int = Field(default=50, ge=1, le=5000)
    # Prefix of the limiters' Redis keys: deployments sharing one Redis keep apart.
    limits_key_prefix: str = "cloudadmin"
    # The Admin Portal's sign-in sessions (docs/portal.md): one ends after this many
    # minutes without a request, and this many hours after its sign-in whatever its use.
    portal_session_idle_minutes: float = Field(default=30, gt=0, le=24 * 60)
    portal_session_lifetime_hours: float = Field(default=12, gt=0, le=30 * 24)
    # Peers whose X-Forwarded-For is honoured (CIDRs or addresses); none by default.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Destinations the service may connect to (brokers, mail servers, webhooks) although
    # they are loopback, private, link-local, CGNAT or metadata addresses: CIDRs and
    # host names, comma-separated.
    outbound_allow: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Seconds to reach a broker or mail server (resolve, connect, handshake).
    outbound_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    # Largest image accepted (width x height), checked from headers before decoding; also
    # Pillow's own MAX_IMAGE_PIXELS. 2048x2048: a logo or favicon never needs more, and a
    # decoded RGBA image then stays under 16 MiB per upload (4096x4096 would be 64 MiB).
    max_image_pixels: int = Field(default=2048 * 2048, ge=1)
    # Hours an Idempotency-Key and its answer are kept.
    idempotency_ttl_hours: float = Field(default=24, gt=0)
    # Where people reach the control panel (scheme, host, optional path), for the links
    # mailed to them (an invitation's set-password link) when the reseller's branding
    # names no domain; unset: the address the request that made the link was sent to.
    public_base_url: str | None = None
    # The platform's own mail server (docs/configuration.md, "The platform's mail
    # server"): it sends what a user's reseller cannot (an operator's user has no
    # reseller; a reseller without a mail server in its branding). Unset: none.
    smtp_host: str | None = None
    smtp_port: int = Field(default=587, ge=1, le=65535)
    # Implicit TLS on port 465, STARTTLS on any other port; false: plain SMTP.
    smtp_tls: bool = True
    smtp_login: str | None = None
    smtp_password: SecretStr | None = None
    # The From address; unset: the login, else noreply@<host>.
    smtp_from: str | None = None
    # Minutes the second step of a two-factor sign-in waits for its code.
    portal_two_factor_minutes: float = Field(default=5, gt=0, le=60)

    # --- Observability (docs/configuration.md) ---
    # Serve Prometheus metrics at /metrics, without an API key (scraped by operators;
    # keep it off the public network). False: no /metrics route at all.
    metrics_enabled: bool = True
    # When set, /metrics (and `worker`'s metrics listener) answer only a scraper that
    # sends `Authorization: Bearer <this>`; others get 401. At least 16 characters.
    metrics_bearer_token: SecretStr | None = Field(default=None, min_length=16)
    # prometheus_client's own variable (no CLOUDADMIN_ prefix): where each worker process
    # writes its metric values. `serve` sets a fresh one per start; set it to choose where.
    prometheus_multiproc_dir: Path | None = Field(
        default=None, validation_alias="PROMETHEUS_MULTIPROC_DIR"
    )
    # `cloudadmin worker` has no API: when set, it serves its own metrics (deliveries,
    # failures, mails) in Prometheus text format on this port, at any path.
    worker_metrics_port: int | None = Field(default=None, ge=1, le=65535)
    worker_metrics_host: str = "127.0.0.1"

    # --- Start-up and shutdown ---
    # Seconds `serve`, `worker` and `migrate` wait for a database that does not answer
    # yet (refused, starting up, name not resolvable); 0: fail at the first attempt.
    database_wait_seconds: float = Field(default=30, ge=0, le=3600)
    # Seconds in-flight requests (`serve`) and deliveries (`worker`) get to finish after
    # SIGTERM before they are cancelled.
    shutdown_grace_seconds: int = Field(default=30, ge=0, le=3600)

    # --- Demo ---
    # Set by `serve --demo` for itself and the processes it starts: the embedded default
    # database is <data_dir>/demo.db, never the user's cloudadmin.db.
    demo: bool = False
    # Where the demo looks, when it seeds, for a local broker and a local mail server
    # (a short TCP connect each); the demo's subscription and mail server point there when
    # something listens, and at nothing otherwise.
    demo_amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/%2F"
    demo_smtp_server: str = "127.0.0.1:1025"

    # --- Dispatcher wake-up ---
    # PostgreSQL: the dispatcher LISTENs for the outbox's NOTIFY and wakes at once; it
    # also looks this often (seconds) for work that did not notify (rows written by
    # other means), besides waking when a backoff or lease comes due.
    dispatcher_idle_poll_seconds: float = Field(default=30, gt=0, le=3600)
    # Without notifications (SQLite; PostgreSQL while the LISTEN connection is down) an
    # idle dispatcher looks every dispatcher_poll_seconds, doubling up to this while it
    # finds nothing. Writes by its own process wake it at once regardless.
    dispatcher_idle_backoff_max_seconds: float = Field(default=5, gt=0, le=600)
    # The dispatcher's watchdog: a WARNING (and cloudadmin_dispatcher_stalled) when it has
    # finished no delivery pass for this long while events are due.
    dispatcher_stall_seconds: float = Field(default=120, gt=0, le=3600)

    # --- Import and export ---

    @field_validator("trusted_proxies", "outbound_allow", "secret_keys_old", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("metrics_bearer_token", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # CLOUDADMIN_METRICS_BEARER_TOKEN= (empty) leaves the metrics open, as unset does.
        return None if value == "" else value

    @field_validator("smtp_host", "smtp_login", "smtp_password", "smtp_from", mode="before")
    @classmethod
    def _empty_mail_setting_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str | None) -> str | None:
        # An empty value is unset (the embedded default), as for the secret key's check.
        return async_database_url(value) if value else None

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir / self.embedded_database_file}"

    @property
    def embedded_database_file(self) -> str:
        return "demo.db" if self.demo else "cloudadmin.db"

    @property
    def uses_embedded_default(self) -> bool:
        return self.database_url is None

    def ensure_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def resolved_secret_key(self) -> str:
        """The key that encrypts stored secrets.

        Production (any configured database) must set ``CLOUDADMIN_SECRET_KEY``; the
        embedded default generates one once and keeps it beside the database file,
        readable by the owner only, so a newcomer needs no configuration.
        """
        if self.secret_key is not None:
            return self.secret_key.get_secret_value()
        if not self.uses_embedded_default:
            raise RuntimeError(
                "CLOUDADMIN_SECRET_KEY must be set when CLOUDADMIN_DATABASE_URL is set"
            )
        self.ensure_data_dir()
        path = self.data_dir / "secret.key"
        if not path.exists():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another process created it first
                pass
            else:
                with os.fdopen(fd, "w") as fh:
                    fh.write(secrets.token_urlsafe(48))
        return path.read_text().strip()

    def secret_keys(self) -> list[str]:
        """The current key (``resolved_secret_key``), then the previous ones: a secret
        box decrypts under any of them and encrypts under the first."""
        old = [key.get_secret_value() for key in self.secret_keys_old]
        return [self.resolved_secret_key(), *old]


@lru_cache
def get_settings() -> Settings:
    return Settings()
