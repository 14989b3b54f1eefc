"""Enumerated values are one fact: `cloudadmin load` takes exactly the values the API's
schema allows, because its records take them from the API's own definitions
(importer/records.py, ``api_literal``).

Every enumerated field of the import records is found by walking the records' models,
so a new one fails ``test_every_enumeration_has_a_case`` until it has a case here. Each
case sends every allowed value and one wrong value through both doors, on both databases:

- `load`: the example document with the value in place;
- the API: where it takes the value (a write, or the filter of a list that reads the
  same definition), the request; where it only answers it, the OpenAPI document's enum
  for the field, which is what the API may answer and what a client validates against.
"""

from __future__ import annotations

import typing
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.addendums.schemas import Addendum, AddendumQuery
from cloudadmin.cloud.lifecycle_policies.schemas import (
    CronSchedule,
    IntervalSchedule,
    LifecyclePolicy,
)
from cloudadmin.cloud.listeners.schemas import OperatingStatus, Protocol, ProvisioningStatus
from cloudadmin.db.models.accounts import GROUPS
from cloudadmin.iam.api_tokens.schemas import GroupName
from cloudadmin.iam.clients.query import ServiceStatusFilter
from cloudadmin.iam.clients.schemas import AccountStatus, AuthType, Client, Lang, Product
from cloudadmin.iam.reselling.notifications.schemas import NotificationType
from cloudadmin.iam.users.schemas import User
from cloudadmin.importer.kinds import KINDS
from cloudadmin.kit.crypto import SecretBox
from tests.facts.doors import CLIENT, RESELLER, importer_accepts
from tests.importer.documents import addendum, example, listener
from tests.web.lists import openapi

WRONG = "enabled"  # the demo's old service status: no enumeration of the API has it

Doc = dict[str, Any]
Door = Callable[[httpx.AsyncClient, AsyncSession, SecretBox, str], Awaitable[bool]]


def values(*annotations: Any) -> tuple[str, ...]:
    """The values of the Literals in ``annotations`` (unions, lists and dicts unwrapped)."""
    found: list[str] = []

    def collect(annotation: Any) -> None:
        if typing.get_origin(annotation) is Literal:
            found.extend(v for v in typing.get_args(annotation) if v not in found)
        else:
            for arg in typing.get_args(annotation):
                collect(arg)

    for annotation in annotations:
        collect(annotation)
    return tuple(found)


def field_values(model: type[BaseModel], name: str) -> tuple[str, ...]:
    return values(model.model_fields[name].annotation)


# -- the enumerated fields of the import records ----------------------------------------


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    if model in seen:
        return
    seen.add(model)
    yield model
    for field in model.model_fields.values():
        for arg in _args(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                yield from _models(arg, seen)


def _args(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in typing.get_args(annotation):
        yield from _args(arg)


def _key_literal(annotation: Any) -> tuple[str, ...]:
    """The values of a dict's key Literal (``dict[Product, ...]``), if any."""
    for arg in _args(annotation):
        if typing.get_origin(arg) is dict:
            return values(typing.get_args(arg)[0])
    return ()


def importer_enumerations() -> dict[str, tuple[str, ...]]:
    """``Model.field`` (``Model.field{key}`` for a dict's keys) -> the values it takes."""
    found: dict[str, tuple[str, ...]] = {}
    seen: set[type[BaseModel]] = set()
    for kind in KINDS:
        for model in _models(kind.model, seen):
            for name, field in model.model_fields.items():
                keys = _key_literal(field.annotation)
                if keys:
                    found[f"{model.__name__}.{name}{{key}}"] = keys
                    taken = values(*[typing.get_args(a)[1] for a in _args(field.annotation)
                                     if typing.get_origin(a) is dict])  # fmt: skip
                else:
                    taken = values(field.annotation)
                if taken:
                    found[f"{model.__name__}.{name}"] = taken
    return found


# -- the cases -----------------------------------------------------------------------------


def _client(doc: Doc, **fields: Any) -> Doc:
    doc["clients"][1].update(fields)  # the example's common account, 2001
    return doc


def _user(doc: Doc, **fields: Any) -> Doc:
    doc["users"][2].update(fields)  # its administrator, 20
    return doc


def _policy(**fields: Any) -> dict[str, Any]:
    record = {"id": 1, "project_id": 11, "region_id": 76, "name": "nightly",
              "status": "active", "user_id": 20}  # fmt: skip
    record.update(fields)
    return record


def openapi_enum(component: str, *path: str) -> tuple[str, ...]:
    """The enum the API's OpenAPI document gives a field (items and nullable unwrapped)."""
    node = openapi()["components"]["schemas"][component]["properties"]
    for step in path:
        node = node[step]
    found: list[str] = []

    def collect(n: dict[str, Any]) -> None:
        found.extend(n.get("enum", []))
        if "const" in n:
            found.append(n["const"])
        for key in ("anyOf", "oneOf"):
            for branch in n.get(key, []):
                collect(branch)
        if "items" in n:
            collect(n["items"])

    collect(node)
    return tuple(found)


def answered(*where: tuple[str, ...]) -> Door:
    """A field the API only answers: it may answer what its OpenAPI enum lists."""

    async def door(
        client: httpx.AsyncClient, session: AsyncSession, box: SecretBox, value: str
    ) -> bool:
        return all(value in openapi_enum(*w) for w in where)

    return door


def filtered(url: str, name: str, key: str = RESELLER) -> Door:
    """A list whose filter reads the same definition: 200 for a value, 400 otherwise."""

    async def door(
        client: httpx.AsyncClient, session: AsyncSession, box: SecretBox, value: str
    ) -> bool:
        r = await client.get(url, params={name: value}, headers={"Authorization": f"apikey {key}"})
        assert r.status_code in (200, 400), r.text
        return r.status_code == 200

    return door


def written(method: str, url: str, body: Callable[[str], Doc], key: str) -> Door:
    async def door(
        client: httpx.AsyncClient, session: AsyncSession, box: SecretBox, value: str
    ) -> bool:
        r = await client.request(
            method, url, json=body(value), headers={"Authorization": f"apikey {key}"}
        )
        assert r.status_code in (200, 201, 400), r.text
        return r.status_code < 300

    return door


@dataclass(frozen=True)
class Case:
    api: tuple[str, ...]  # the API's definition of the values
    place: Callable[[Doc, str], Doc]  # the example document with the value in place
    door: Door


SERVICE_KEYS = tuple(openapi()["components"]["schemas"]["ServiceStatuses"]["properties"])

CASES: dict[str, Case] = {
    "ClientRecord.status": Case(
        values(AccountStatus),
        lambda d, v: _client(d, status=v),
        answered(("Client", "status")),
    ),
    "ClientRecord.capabilities": Case(
        values(Product),
        lambda d, v: _client(d, capabilities=[v]),
        answered(("Client", "capabilities")),
    ),
    "ClientRecord.serviceStatuses{key}": Case(
        SERVICE_KEYS,
        lambda d, v: _client(d, serviceStatuses={v: {"status": "active", "enabled": True}}),
        answered(("Client", "capabilities")),  # the same names as ServiceStatuses' keys
    ),
    "ServiceStatus.status": Case(
        values(ServiceStatusFilter),
        lambda d, v: _client(d, serviceStatuses={"CDN": {"status": v, "enabled": True}}),
        filtered("/iam/clients", "cdn"),
    ),
    "ClientRecord.paidFeatures{key}": Case(
        values(Product),
        lambda d, v: _client(d, paidFeatures={v: []}),
        answered(("Client", "capabilities")),
    ),
    "ClientRecord.freeFeatures{key}": Case(
        values(Product),
        lambda d, v: _client(d, freeFeatures={v: []}),
        answered(("Client", "capabilities")),
    ),
    "Feature.service": Case(
        values(Product),
        lambda d, v: _client(
            d, paidFeatures={"CDN": [{"feature_id": 7, "name": "x", "service": v}]}
        ),
        answered(("Client", "capabilities")),
    ),
    "ClientRecord.signup_process": Case(
        field_values(Client, "signup_process"),
        lambda d, v: _client(d, signup_process=v),
        answered(("Client", "signup_process")),
    ),
    "ClientRecord.client_type": Case(
        field_values(Client, "client_type"),
        lambda d, v: _client(d, client_type=v),
        filtered("/iam/clients", "client_type"),
    ),
    "UserRecord.lang": Case(
        values(Lang),
        lambda d, v: _user(d, lang=v),
        written("PATCH", "/iam/users/20", lambda v: {"lang": v}, CLIENT),
    ),
    "UserRecord.auth_types": Case(
        values(AuthType),
        lambda d, v: _user(d, auth_types=[v]),
        written("PATCH", "/iam/users/20", lambda v: {"auth_types": [v]}, CLIENT),
    ),
    "UserRecord.user_type": Case(
        field_values(User, "user_type"),
        lambda d, v: _user(d, user_type=v),
        answered(("User", "user_type")),
    ),
    "NotificationSettingRecord.notification_type": Case(
        values(NotificationType),
        lambda d, v: {
            **d,
            "notification_settings": [
                {"id": 1, "reseller": 1000, "notification_type": v, "email": "a@acme.example"}
            ],
        },
        written(
            "POST",
            "/iam/reselling/resellers/1000/notification_settings",
            lambda v: {"notification_type": v, "email": "a@acme.example"},
            RESELLER,
        ),
    ),
    "ListenerRecord.operating_status": Case(
        values(OperatingStatus),
        lambda d, v: {**d, "listeners": [listener(operating_status=v)]},
        answered(("Listener", "operating_status")),
    ),
    "ListenerRecord.protocol": Case(
        values(Protocol),
        lambda d, v: {**d, "listeners": [listener(protocol=v)]},
        answered(("Listener", "protocol")),
    ),
    "ListenerRecord.provisioning_status": Case(
        values(ProvisioningStatus),
        lambda d, v: {**d, "listeners": [listener(provisioning_status=v)]},
        answered(("Listener", "provisioning_status")),
    ),
    "LifecyclePolicyRecord.status": Case(
        field_values(LifecyclePolicy, "status"),
        lambda d, v: {**d, "lifecycle_policies": [_policy(status=v)]},
        answered(("LifecyclePolicy", "status")),
    ),
    "Schedule.type": Case(
        field_values(CronSchedule, "type") + field_values(IntervalSchedule, "type"),
        lambda d, v: {**d, "lifecycle_policies": [_policy(schedules=[{"type": v}])]},
        lambda c, s, b, v: (
            answered(("CronSchedule", "type"))(c, s, b, v)
            if v == "cron"
            else answered(("IntervalSchedule", "type"))(c, s, b, v)
        ),
    ),
    "AddendumRecord.status": Case(
        field_values(Addendum, "status"),
        lambda d, v: {**d, "addendums": [addendum(status=v)]},
        filtered("/billing/org/v1/addendums", "status"),
    ),
    "Currency.char_code": Case(
        field_values(AddendumQuery, "currency_char_code"),
        lambda d, v: {
            **d,
            "addendums": [
                addendum(currency={"id": {"USD": 1}.get(v, 2), "char_code": v, "symbol": "$"})
            ],
        },
        filtered("/billing/org/v1/addendums", "currency_char_code"),
    ),
}


def test_every_enumeration_has_a_case() -> None:
    found = importer_enumerations()
    assert sorted(found) == sorted(CASES), "give each enumerated import field a case here"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_importer_takes_the_apis_values(name: str) -> None:
    assert set(importer_enumerations()[name]) == set(CASES[name].api)
    assert WRONG not in CASES[name].api


def test_group_names_are_the_apis() -> None:
    """Groups are given by name or id (a validator, not a Literal): the names are the
    API's GroupName."""
    assert set(GROUPS.values()) == set(typing.get_args(GroupName))


@pytest.mark.parametrize("name", sorted(CASES))
async def test_both_doors(
    name: str, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox
) -> None:
    case = CASES[name]
    from tests.facts.doors import base_landscape

    await base_landscape(session, box)  # the API's callers (the example's keys)
    outcomes = {}
    for value in (*case.api, WRONG):
        loaded = await importer_accepts(session, box, case.place(example(), value))
        taken = await case.door(client, session, box, value)
        outcomes[value] = (loaded, taken)
    expected = {value: (value != WRONG,) * 2 for value in outcomes}
    assert outcomes == expected
