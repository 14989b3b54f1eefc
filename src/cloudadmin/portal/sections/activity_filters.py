"""The Activity logs section's filters and columns: the query string of the list page
read into the API's own filter (``LogFilter``, validated by its own rules), with a time
range on top; what was typed is kept for the redisplay, with each field's message."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from cloudadmin.iam.activity_log.repository import LogFilter
from cloudadmin.portal.forms import UNSTORABLE, Form, whole_number

# The record's fields a table may show, in its order, with their headings (the manual's
# names: reseller-support/manuals/view-the-history-of-users-requests-and-actions-via-
# activity-logs). The id is always shown: it opens the record.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("requested_at", "Requested at"),
    ("client", "Account"),
    ("user", "User ID"),
    ("user_email", "User e-mail"),
    ("token", "API key"),
    ("actions", "Action"),
    ("method", "Method"),
    ("path", "Path"),
    ("query_params", "Query"),
    ("data", "Data"),
    ("status_code", "Status code"),
    ("reverted", "Reverted"),
    ("remote_ip_address", "Remote IP"),
    ("host", "Host"),
)
DEFAULT_COLUMNS = (
    "requested_at",
    "client",
    "user_email",
    "actions",
    "method",
    "path",
    "status_code",
    "reverted",
)

# The time range: the last hour, day, week or month; "" is any time (or the from/to
# fields).
RANGES: tuple[tuple[str, str, timedelta | None], ...] = (
    ("", "Any time", None),
    ("1h", "The last hour", timedelta(hours=1)),
    ("24h", "The last 24 hours", timedelta(hours=24)),
    ("7d", "The last 7 days", timedelta(days=7)),
    ("30d", "The last 30 days", timedelta(days=30)),
)
_RANGE = {key: delta for key, _label, delta in RANGES}

FIELDS = (
    "method",
    "path",
    "status_code",
    "remote_ip_address",
    "user_id",
    "token_id",
    "client_id",
    "min_requested_at",
    "max_requested_at",
)
# Clearer words than the pattern a value missed.
_MESSAGES = {
    "method": "Letters only: GET, POST, PATCH ...",
    "status_code": "A status code or its first digits: 4, 40 or 404.",
}
_FILTER = TypeAdapter(LogFilter)
_MAX_LIMIT = 1000
DEFAULT_LIMIT = 25


def _int_param(form: Form, name: str, default: int, low: int, high: int) -> int:
    number = whole_number(form, name, low=low, high=high)
    return default if number is None else number


def read_filters(
    query: Mapping[str, str], *, now: datetime
) -> tuple[Form, LogFilter | None, int, int]:
    """The form as typed, the API's filter (None, with field messages, when a value is
    refused), the page's limit and offset."""
    form = Form()
    for name in (*FIELDS, "range", "limit", "offset"):
        value = query.get(name, "").strip()
        if "\x00" in value:
            form.errors[name] = UNSTORABLE
            value = ""
        if value:
            form.values[name] = value
    limit = _int_param(form, "limit", DEFAULT_LIMIT, 1, _MAX_LIMIT)
    offset = _int_param(form, "offset", 0, 0, 2**63 - 1)
    values: dict[str, Any] = {name: form.values[name] for name in FIELDS if name in form.values}
    span = form.get("range")
    if span not in _RANGE:
        form.errors["range"] = "Choose one of the ranges."
    elif span:
        if "min_requested_at" in values:
            form.errors["range"] = "Choose a range or a From time, not both."
        else:
            delta = _RANGE[span]
            assert delta is not None
            values["min_requested_at"] = now - delta
    try:
        flt = _FILTER.validate_python(values)
    except PydanticValidationError as invalid:
        for error in invalid.errors():
            loc = [str(part) for part in error.get("loc", ()) if not isinstance(part, int)]
            name = loc[0] if loc else "__form__"
            message = _MESSAGES.get(name) or str(error.get("msg", "Invalid value."))
            form.errors.setdefault(name, message.removeprefix("Value error, "))
        return form, None, limit, offset
    if form.errors:
        return form, None, limit, offset
    return form, flt, limit, offset
