"""The walk's parts: its cases (each names the SDK methods it calls), the demo server they
call, and the operations of ours the SDK has no method for.

A case gets a :class:`Demo`: one SDK client per kind of caller of the demo landscape
(``demo.sdk("client_admin")``), each with strict response validation and without
retries, over one HTTP client that records every request sent. It returns what the SDK
parsed; the walk checks that it sent every request of the methods it names.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from gcore import AsyncGcore

from cloudadmin.demo.landscape import PROJECTS, REGION
from tests.sdk.inventory import Op, template

CLIENT, OTHER_CLIENT = 2001, 2002  # of client_admin and other_client_admin
PROJECT, OTHER_PROJECT = PROJECTS[CLIENT], PROJECTS[OTHER_CLIENT]


@dataclass
class Demo:
    base_url: str
    keys: dict[str, str]  # per kind of caller, as the demo prints them
    http: httpx.AsyncClient
    mails: list[tuple[list[str], str]]  # what the reseller's mail server received
    sent: list[tuple[str, str]] = field(default_factory=list)  # (method, URL path)
    clients: dict[str, AsyncGcore] = field(default_factory=dict)

    def sdk(self, kind: str = "client_admin") -> AsyncGcore:
        if kind not in self.clients:
            project = OTHER_PROJECT if kind == "other_client_admin" else PROJECT
            self.clients[kind] = AsyncGcore(
                api_key=self.keys[kind],
                base_url=self.base_url,
                http_client=self.http,
                cloud_project_id=project,
                cloud_region_id=REGION,
                max_retries=0,
                polling_interval_seconds=1,  # the SDK's least
                polling_timeout_seconds=30,
                _strict_response_validation=True,  # a shape the model rejects raises
            )
        return self.clients[kind]

    def sent_op(self, op: Op) -> bool:
        pattern = re.compile("^" + re.escape(op[1]).replace(r"\{\}", "[^/]+") + "$")
        return any(method == op[0] and pattern.match(path) for method, path in self.sent)


@asynccontextmanager
async def demo_client(
    base_url: str, keys: dict[str, str], mails: list[tuple[list[str], str]]
) -> AsyncIterator[Demo]:
    sent: list[tuple[str, str]] = []

    async def record(request: httpx.Request) -> None:
        sent.append((request.method, request.url.path))

    async with httpx.AsyncClient(event_hooks={"request": [record]}, timeout=30) as http:
        yield Demo(base_url, keys, http, mails, sent)


Call = Callable[[Demo], Awaitable[list[Any]]]


@dataclass(frozen=True)
class Case:
    name: str
    methods: tuple[str, ...]  # the SDK methods it calls, as named on the client
    # Operations the SDK has no method for that the case sends through the SDK's client
    # (``sdk.patch(path, cast_to=<the SDK's model>)``): parsed by the SDK all the same.
    raw: tuple[Op, ...]
    run: Call


CASES: dict[str, Case] = {}


def covers(*methods: str, raw: tuple[Op, ...] = ()) -> Callable[[Call], Call]:
    """Registers a case that calls each of these SDK methods (and sends ``raw``)."""

    def register(fn: Call) -> Call:
        name = f"{fn.__module__.rpartition('.')[2]}.{fn.__name__}"
        CASES[name] = Case(name, methods, tuple((v, template(p)) for v, p in raw), fn)
        return fn

    return register


# Operations of ours that the SDK (0.59.0) has no method for, with the reason. The walk
# fails when the SDK gains one (its case is then due) or when one is no longer served.
NOT_IN_SDK: dict[Op, str] = {
    **{
        (verb, template(path)): "the SDK has no account administration (iam has only users, "
        "API tokens and the account overview)"
        for verb, path in [
            ("GET", "/iam/clients"),
            ("GET", "/iam/clients/{clientId}"),
            ("PATCH", "/iam/clients/{clientId}"),
            ("DELETE", "/iam/clients/{clientId}"),
            ("POST", "/iam/clients/{clientId}/client-users/create"),
            ("GET", "/iam/clients/{clientId}/client-users/{userId}"),
            ("PUT", "/iam/clients/{clientId}/client-users/{userId}"),
            ("POST", "/iam/users"),
            ("DELETE", "/iam/users/{userId}"),
            ("POST", "/iam/auth/set-password"),
        ]
    },
    **{
        (verb, template(path)): "API tokens at the v1 paths: the SDK calls the v2 ones"
        for verb, path in [
            ("GET", "/iam/clients/{clientId}/tokens"),
            ("POST", "/iam/clients/{clientId}/tokens"),
            ("GET", "/iam/clients/{clientId}/tokens/{tokenId}"),
            ("DELETE", "/iam/clients/{clientId}/tokens/{tokenId}"),
        ]
    },
    **{
        (verb, template(path)): "reselling (sellers, branding, notification settings) is "
        "not in the SDK"
        for verb, path in [
            ("GET", "/iam/admin/sellers"),
            ("POST", "/iam/admin/sellers"),
            ("GET", "/iam/admin/sellers/{sellerId}"),
            ("PATCH", "/iam/admin/sellers/{sellerId}"),
            ("DELETE", "/iam/admin/sellers/{sellerId}"),
            ("GET", "/iam/reselling/settings"),
            ("PUT", "/iam/reselling/settings"),
            ("POST", "/iam/reselling/settings/upload"),
            ("GET", "/iam/reselling/files/{name}"),
            ("GET", "/iam/reselling/resellers/{resellerId}/notification_settings"),
            ("POST", "/iam/reselling/resellers/{resellerId}/notification_settings"),
            ("GET", "/iam/reselling/resellers/{resellerId}/notification_settings/{id}"),
            ("PATCH", "/iam/reselling/resellers/{resellerId}/notification_settings/{id}"),
            ("DELETE", "/iam/reselling/resellers/{resellerId}/notification_settings/{id}"),
        ]
    },
    ("GET", template("/iam/activity_log/requests")): "the activity log is not in the SDK",
    ("GET", template("/iam/activity_log/requests/{id}")): "the activity log is not in the SDK",
    ("GET", template("/billing/org/v1/addendums")): "the SDK has no billing",
    ("GET", template("/billing/org/v1/addendums/{id}")): "the SDK has no billing",
    ("PATCH", template("/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")): (
        "the provider's deprecated v1 rename: the SDK's update() calls the v2 PATCH"
    ),
    ("POST", template("/cloud/v2/pricing/{project_id}/{region_id}/k8s/clusters")): (
        "the SDK has no price preview"
    ),
    ("GET", "/cloud/v1/users"): "the SDK has only /cloud/v1/users/assignments",
    **{
        (verb, path): "user-action subscriptions (webhook and AMQP) are not in the SDK"
        for verb, path in [
            ("POST", "/cloud/v1/user_actions/subscribe_amqp"),
            ("POST", "/cloud/v1/user_actions/subscribe_amqp_test"),
            ("POST", "/cloud/v1/user_actions/unsubscribe_amqp"),
            ("GET", "/cloud/v1/user_actions/amqp_subscriptions_list"),
            ("GET", template("/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}")),
            ("PATCH", template("/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}")),
            ("POST", "/cloud/v1/user_actions/subscribe"),
            ("POST", "/cloud/v1/user_actions/unsubscribe"),
            ("GET", "/cloud/v1/user_actions/subscriptions_list"),
        ]
    },
}

# Served paths that are not the API: no client calls them through the SDK.
# The web consoles (the Admin Portal) answer HTML pages to browsers, not the API.
CONSOLES = ("/portal/", "/portal")
NOT_API = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/redoc"),
}
