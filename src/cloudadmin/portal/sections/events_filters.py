"""The Events section's query strings: the subscriptions' filters and the user-action
feed's (the API's filters of GET /cloud/v1/user_actions, one value each), read with
the API's own types; what was typed is kept for the redisplay with each field's
message. And how a page words a wait: "12 min", "in 40 s"."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from cloudadmin.cloud.user_actions.filter_values import SourceIp, Text255, UserAgent
from cloudadmin.cloud.user_actions.repository import LogFilter
from cloudadmin.cloud.user_actions.schemas import ActionType, ApiGroup
from cloudadmin.kit.ints import Id32Filter
from cloudadmin.kit.params import InstantQuery
from cloudadmin.portal.forms import UNSTORABLE, Form, parse, whole_number

PAGE_ROWS = 25


class ActionFilter(BaseModel):
    """The feed's form: the endpoint's parameters and their rules, one value each."""

    model_config = ConfigDict(extra="ignore")

    action_type: ActionType | None = None
    api_group: ApiGroup | None = None
    from_timestamp: InstantQuery = None
    to_timestamp: InstantQuery = None
    project_id: Id32Filter | None = None
    region_id: Id32Filter | None = None
    resource_id: Text255 | None = None
    search_field: Text255 | None = None
    source_user_ip: SourceIp | None = None
    user_agent: UserAgent | None = None
    order_by: Literal["asc", "desc"] = "desc"

    def log_filter(self) -> LogFilter:
        return LogFilter(
            action_type=(self.action_type,) if self.action_type else (),
            api_group=(self.api_group,) if self.api_group else (),
            from_timestamp=self.from_timestamp,
            to_timestamp=self.to_timestamp,
            project_id=() if self.project_id is None else (self.project_id,),
            region_id=() if self.region_id is None else (self.region_id,),
            resource_id=(self.resource_id,) if self.resource_id else (),
            search_field=self.search_field,
            source_user_ips=(self.source_user_ip,) if self.source_user_ip else (),
            user_agents=(self.user_agent,) if self.user_agent else (),
        )


ACTION_FIELDS = tuple(ActionFilter.model_fields)
_CHOICE = {
    "action_type": "Choose an action type of the list.",
    "api_group": "Choose an API group of the list.",
    "order_by": "Choose newest or oldest first.",
}


def _typed(query: Mapping[str, str], names: tuple[str, ...]) -> Form:
    form = Form()
    for name in names:
        value = query.get(name, "").strip()
        if "\x00" in value:
            form.errors[name] = UNSTORABLE
        elif value:
            form.values[name] = value
    return form


def read_actions(query: Mapping[str, str]) -> tuple[Form, ActionFilter | None, int]:
    """The feed's form as typed, its filter (None, with field messages, when a value
    is refused), and the page's offset."""
    form = _typed(query, (*ACTION_FIELDS, "offset"))
    offset = whole_number(form, "offset") or 0
    values = {name: form.values[name] for name in ACTION_FIELDS if name in form.values}
    checked = Form(values=dict(form.values))
    parsed = parse(ActionFilter, values, checked)
    for name, message in checked.errors.items():
        form.errors.setdefault(name, _CHOICE.get(name, message.removeprefix("Value error, ")))
    if form.errors:
        return form, None, offset
    return form, parsed, offset


def read_subscription_filters(query: Mapping[str, str]) -> tuple[Form, int | None, bool]:
    """The subscriptions' filters: one account (an id), failing ones only."""
    form = _typed(query, ("client_id", "failing", "amqp_offset", "webhook_offset"))
    client_id = whole_number(form, "client_id", high=2**31 - 1)
    whole_number(form, "amqp_offset")
    whole_number(form, "webhook_offset")
    return form, client_id, form.checked("failing")


def offset_of(form: Form, name: str) -> int:
    text = form.get(name)
    return int(text) if text.isascii() and text.isdigit() and name not in form.errors else 0


def span(seconds: float) -> str:
    """A wait in the largest unit that keeps it a whole number or so: 45 s, 12 min."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def next_retry(next_at: datetime | None, now: datetime) -> str:
    if next_at is None:
        return "none waiting"
    wait = (next_at - now).total_seconds()
    if wait <= 0:
        return "due now"
    return f"in {span(wait)} ({next_at.strftime('%H:%M:%S')} UTC)"
