"""A query parameter that an operation does not document is a 400 naming it, on every
operation (web/query_rule.py, applied by ApiRoute; docs/api.md, "Query parameters").

Walked over every list found in the service's OpenAPI document (tests/web/lists.py), on
both databases: the documented paging parameters work, an unknown one (or a typo of a
documented one) is refused with the parameter's name as the key. The provider's SDK
sends only parameters the provider documents: each of those is one we take.
"""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.query_rule import documented_query
from cloudadmin.web.route import ApiRoute
from tests.cloud.helpers import CloudLandscape, cloud_landscape
from tests.factories import auth
from tests.provider.conformance import documents, in_provider, provider_operation
from tests.web.lists import ListOperation, ident, list_operations, openapi


def _routes() -> list[ApiRoute]:
    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="rule"))
    return [r for r in app.routes if isinstance(r, ApiRoute)]


def _documented(method: str, path: str) -> set[str]:
    op = openapi()["paths"][path][method.lower()]
    return {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}


@pytest.mark.parametrize("route", _routes(), ids=lambda r: f"{sorted(r.methods)[0]} {r.path}")
def test_what_an_operation_takes_is_what_it_documents(route: ApiRoute) -> None:
    for method in route.methods:
        assert documented_query(route) == _documented(method, route.path)


def _provider_query(method: str, path: str) -> set[str]:
    op = provider_operation(method, path)
    names = set()
    for param in op.operation.get("parameters", []):
        while "$ref" in param:
            node = documents()[op.document]
            for part in param["$ref"][2:].split("/"):
                node = node[part]
            param = node
        if param.get("in") == "query":
            names.add(param["name"])
    return names


def test_every_parameter_the_provider_documents_is_taken() -> None:
    """The SDK (generated from the provider's documents) sends nothing we refuse."""
    checked = 0
    for path, item in openapi()["paths"].items():
        for method in item:
            if not in_provider(method, path):
                continue
            try:
                theirs = _provider_query(method, path)
            except AssertionError:  # published but not extracted yet: test_conformance says so
                continue
            checked += 1
            missing = theirs - _documented(method, path)
            assert not missing, f"{method.upper()} {path} refuses the provider's {missing}"
    assert checked > 20


def _url(op: ListOperation, cl: CloudLandscape) -> str:
    values = {
        "project_id": cl.project,
        "region_id": cl.region,
        "clientId": cl.ls.client_account.id,
        "resellerId": cl.ls.reseller_account.id,
    }

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in values, f"{op.path}: give the path parameter {name} a value here"
        return str(values[name])

    return re.sub(r"\{(\w+)\}", value, op.path)


def _key(cl: CloudLandscape, op: ListOperation) -> str:
    """A caller the list answers 200: its account's administrator for its own things,
    the reseller for the reseller's, the operator for the rest."""
    if op.path.startswith(("/iam/users", "/cloud/", "/iam/clients/{clientId}")):
        return cl.ls.client_admin
    if op.path.startswith(("/iam/admin/sellers", "/iam/reselling", "/iam/clients")):
        return cl.ls.reseller
    return cl.ls.operator


def _field_errors(r: httpx.Response, path: str) -> dict[str, list[str]]:
    body = r.json()
    assert body["exception_class"] == "ValidationError", body
    return body["invalid_fields" if path.startswith("/cloud/") else "errors"]


@pytest.mark.parametrize("op", list_operations(), ids=ident)
async def test_unknown_parameter_is_refused_by_name(
    op: ListOperation, client: httpx.AsyncClient, session: AsyncSession
) -> None:
    cl = await cloud_landscape(session)
    url, headers = _url(op, cl), auth(_key(cl, op))
    paging = {k: v for k, v in {"limit": "2", "offset": "0"}.items() if k in op.query}

    taken = await client.get(url, params=paging, headers=headers)
    assert taken.status_code == 200, taken.text

    unknown = await client.get(url, params={**paging, "colour": "blue"}, headers=headers)
    assert unknown.status_code == 400, unknown.text
    errors = _field_errors(unknown, op.path)
    assert list(errors) == ["colour"]
    assert "Unknown query parameter" in errors["colour"][0]

    # A typo of a documented parameter, and two unknown ones at once: each named.
    typo = {"limt": "2"} if "limit" in op.query else {"rolle": "x"}
    both = await client.get(url, params={**typo, "b": "1", "c": "2"}, headers=headers)
    assert both.status_code == 400, both.text
    assert list(_field_errors(both, op.path)) == [*typo, "b", "c"]


async def test_the_key_is_checked_first_and_the_refusal_logged(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    """As for any other parameter's 400: a bad key is a 401, and a valid key's refused
    request is in the activity log with its caller."""
    cl = await cloud_landscape(session)
    bad = await client.get("/iam/clients/me", params={"x": "1"}, headers=auth("1_wrong"))
    assert bad.status_code == 401, bad.text
    r = await client.get("/iam/clients/me", params={"x": "1"}, headers=auth(cl.ls.reseller))
    assert r.status_code == 400 and list(r.json()["errors"]) == ["x"]
    log = await client.get(
        "/iam/activity_log/requests",
        params={"path": "/iam/clients/me"},
        headers=auth(cl.ls.reseller),
    )
    (entry,) = log.json()["result"]
    assert entry["status_code"] == 400 and entry["query_params"] == "x=1"
    assert entry["client"] == cl.ls.reseller_account.id
