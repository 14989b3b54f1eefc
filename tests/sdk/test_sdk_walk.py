"""The provider's official SDK (``gcore`` 0.59.0), unchanged, against a real server.

Every resource method of the SDK whose requests this service serves is called by a case
(cases_iam.py, cases_cloud.py) with strict response validation, against `cloudadmin
serve` on loopback with the demo's landscape loaded, on SQLite and on PostgreSQL: the
demo's data and every answer the SDK reads pass its models.

The walk is complete by construction: the SDK's methods and the requests each sends are
read from its source (inventory.py) and intersected with the app's routes. It fails
when a served method has no case, when a case does not send what its methods send, when
an operation of ours is neither reached through the SDK nor listed in ``NOT_IN_SDK``
(or is listed there but the SDK has it now), and when docs/conformance.md's list of the
SDK's methods that are not served differs from the SDK.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from gcore._models import BaseModel
from starlette.routing import Route

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from tests.sdk import cases_cloud, cases_iam  # noqa: F401 - they register the cases
from tests.sdk.conftest import DemoServer
from tests.sdk.inventory import Method, Op, sdk_methods, template
from tests.sdk.walk import CASES, CONSOLES, NOT_API, NOT_IN_SDK, demo_client

CONFORMANCE = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


@cache
def served() -> frozenset[Op]:
    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="walk"))
    return frozenset(
        (verb, template(route.path))
        for route in app.routes
        if isinstance(route, Route | APIRoute)
        for verb in route.methods or ()
        if verb != "HEAD"
    )


@cache
def methods() -> dict[str, Method]:
    return {m.name: m for m in sdk_methods()}


def served_methods() -> set[str]:
    return {name for name, m in methods().items() if m.ops <= served()}


def covered() -> set[str]:
    return {name for case in CASES.values() for name in case.methods}


def test_the_inventory_reads_methods_built_on_others() -> None:
    """The reader follows a method into those it calls (here through the client's tasks),
    and finds paths written as literals and as path_template()."""
    listener = "/cloud/v{}/lblisteners/{{}}/{{}}/{{}}"
    assert methods()["cloud.load_balancers.listeners.update_and_poll"].ops == {
        ("PATCH", listener.format(2)),
        ("GET", "/cloud/v1/tasks/{}"),
        ("GET", listener.format(1)),
    }
    assert methods()["iam.users.invite"].ops == {("POST", "/iam/clients/invite_user")}
    assert methods()["cloud.tasks.list"].ops == {("GET", "/cloud/v1/tasks")}
    assert len(methods()) > 800  # every area of the SDK, not only iam and cloud


def test_every_served_sdk_method_has_a_case() -> None:
    missing = served_methods() - covered()
    assert not missing, f"SDK methods this service serves without a case: {sorted(missing)}"


@cache
def taken_query() -> dict[Op, frozenset[str]]:
    """The query parameters each of our operations documents (and so takes: an unknown
    one is a 400)."""
    app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="walk"))
    return {
        (verb.upper(), template(path)): frozenset(
            p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
        )
        for path, item in app.openapi()["paths"].items()
        for verb, operation in item.items()
    }


def test_every_query_parameter_of_a_served_sdk_method_is_taken() -> None:
    """The SDK may send any of its method's parameters; a served method's are all ours."""
    refused = {
        f"{name} {op[0]} {op[1]}": sorted(names - taken_query()[op])
        for name in sorted(served_methods())
        for op, names in methods()[name].query.items()
        if names - taken_query()[op]
    }
    assert not refused, f"query parameters the SDK sends that we do not take: {refused}"


def test_cases_name_served_sdk_methods() -> None:
    unknown = covered() - set(methods())
    assert not unknown, f"cases name methods the SDK does not have: {sorted(unknown)}"
    unserved = covered() - served_methods()
    assert not unserved, f"cases name SDK methods this service does not serve: {unserved}"


def test_every_served_operation_is_reached_or_not_in_the_sdk() -> None:
    through_sdk = {op for name in covered() for op in methods()[name].ops}
    raw = {op for case in CASES.values() for op in case.raw}
    unreached = {
        op for op in served() - through_sdk - set(NOT_IN_SDK) - NOT_API
        if not op[1].startswith(CONSOLES)
    }  # fmt: skip
    assert not unreached, f"served operations no SDK case sends: {sorted(unreached)}"
    sdk_ops = {op for m in methods().values() for op in m.ops}
    gained = (set(NOT_IN_SDK) | raw) & sdk_ops
    assert not gained, f"the SDK has these now (give them a case): {sorted(gained)}"
    stale = (set(NOT_IN_SDK) | raw) - served()
    assert not stale, f"listed as not in the SDK but not served: {sorted(stale)}"


UNSERVED_ROW = re.compile(r"^\| `([a-z0-9_.]+?)(\.\*)?` \|", re.MULTILINE)


def test_conformance_lists_the_unserved_methods() -> None:
    """docs/conformance.md lists, one per row, every SDK method that this service does not
    serve of a resource it serves part of; the others by area (``cdn.*``), whose row
    covers the area's methods that are not served."""
    section = CONFORMANCE.read_text(encoding="utf-8").split("## The SDK's methods")[1]
    section = section.split("\n## ")[0]
    rows = UNSERVED_ROW.findall(section)
    listed = {name for name, star in rows if not star}
    areas = {name for name, star in rows if star}
    unserved = set(methods()) - served_methods()
    resources = {name.rpartition(".")[0] for name in served_methods()}
    # One row per method in a resource that has a served method, besides it.
    singles = {name for name in unserved if name.rpartition(".")[0] in resources}
    assert listed == singles, (
        f"missing: {sorted(singles - listed)}; not unserved methods: {sorted(listed - singles)}"
    )
    rest = unserved - singles
    uncovered = {n for n in rest if not any(n.startswith(f"{a}.") for a in areas)}
    assert not uncovered, f"unserved SDK methods under no listed area: {sorted(uncovered)}"
    empty = {a for a in areas if not any(n.startswith(f"{a}.") for n in rest)}
    assert not empty, f"areas without an unserved method: {sorted(empty)}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
async def test_sdk_reads_the_answer(name: str, demo_server: DemoServer) -> None:
    case = CASES[name]
    async with demo_client(
        demo_server.base_url, demo_server.keys, demo_server.mailbox.mails
    ) as demo:
        try:
            parsed = await case.run(demo)
        except Exception as exc:
            raise AssertionError(f"{name}: {exc!r}\n{demo_server.process.tail()}") from exc
    assert parsed
    for model in parsed:
        assert isinstance(model, BaseModel), type(model)
    for method in case.methods:
        unsent = [op for op in methods()[method].ops if not demo.sent_op(op)]
        assert not unsent, f"{name} names {method} but did not send {unsent}"
    unsent = [op for op in case.raw if not demo.sent_op(op)]
    assert not unsent, f"{name} did not send {unsent}"
