"""Logging set-up: plain text for people, one JSON object per line for machines."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from cloudadmin.config import LogFormat, Settings
from cloudadmin.kit.redact import redact_query

# uvicorn's "color_message" repeats the message with ANSI colour codes: never in a log
# file.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def command_line(log_format: LogFormat, message: str, *, level: str = "info") -> str:
    """What a command says of itself (the database it works on, a problem at start,
    what it did), in the log format: the message alone for people, or the record
    JsonFormatter writes, so that with CLOUDADMIN_LOG_FORMAT=json every line a command
    writes to stderr is JSON, before logging is configured too."""
    if log_format is not LogFormat.json:
        return message
    record = logging.makeLogRecord(
        {"name": "cloudadmin.cli", "levelname": level.upper(), "msg": message}
    )
    return JsonFormatter().format(record)


class RedactAccessQuery(logging.Filter):
    """Masks secret query parameters (``?password=``) in uvicorn's access log lines, as
    the activity log does (kit/redact.py). uvicorn logs ``(client, method, path with
    query, HTTP version, status)``."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, sep, query = args[2].partition("?")
            if sep:
                record.args = (*args[:2], f"{path}?{redact_query(query)}", *args[3:])
        return True


def log_config(settings: Settings) -> dict[str, Any]:
    """A logging dictConfig shared by the CLI and uvicorn (so its logs match ours)."""
    formatter: dict[str, Any]
    if settings.log_format is LogFormat.json:
        formatter = {"()": "cloudadmin.logs.JsonFormatter"}
    else:
        formatter = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    level = settings.log_level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "filters": {"redact_query": {"()": "cloudadmin.logs.RedactAccessQuery"}},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            },
        },
        "root": {"handlers": ["default"], "level": level},
        "loggers": {
            "uvicorn": {"level": level},
            # The service writes its own access line, one per request, with the route
            # template, the request id and the caller (observability/request_observer.py):
            # uvicorn's is silenced, not written twice. Its filter stays, should anyone
            # give it a handler again.
            "uvicorn.access": {
                "level": level,
                "filters": ["redact_query"],
                "handlers": [],
                "propagate": False,
            },
        },
    }


def configure(settings: Settings) -> None:
    import logging.config

    logging.config.dictConfig(log_config(settings))
