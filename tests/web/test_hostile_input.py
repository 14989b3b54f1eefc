"""No input gives a 5xx (errors.md, "Text and numbers the database cannot store"): NUL
and unpaired surrogates anywhere in a request's text, and integers past their
column's range, are a 400 naming the field, with nothing written."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.base import Base
from cloudadmin.db.models import Seller
from cloudadmin.web.error_render import to_api_error
from tests.factories import Landscape, auth, landscape, make_seller
from tests.iam.accounts_helpers import STRONG_PASSWORD

NUL = "\u0000"
SURROGATE = "\ud800"


class World:
    ls: Landscape
    seller_id: int

    def token(self, kind: str) -> str:
        return str(getattr(self.ls, kind))

    def url(self, template: str) -> str:
        return template.format(
            client=self.ls.client_account.id,
            seller=self.seller_id,
            reseller=self.ls.reseller_account.id,
        )


@pytest.fixture
async def world(session: AsyncSession) -> World:
    w = World()
    w.ls = await landscape(session)
    w.seller_id = (await make_seller(session, w.ls.reseller_account)).id
    await session.commit()
    return w


async def snapshot(session: AsyncSession) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the activity log (which records the refusal), and
    without a key's last_usage (the key was used: that is bookkeeping, not a change)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in Base.metadata.sorted_tables:
        if table.name != "activity_log":
            columns = [
                c for c in table.columns if (table.name, c.name) != ("api_keys", "last_usage")
            ]
            rows = (await session.execute(select(*columns))).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    await session.commit()
    return out


def field_errors(r: httpx.Response) -> dict[str, list[str]]:
    body = r.json()
    assert body["exception_class"] == "ValidationError", body
    return dict(body.get("errors") or body.get("invalid_fields") or {})


async def refused(
    client: httpx.AsyncClient,
    session: AsyncSession,
    method: str,
    url: str,
    token: str,
    field: str,
    *,
    body: Any = None,
    content: bytes | None = None,
    params: dict[str, str] | None = None,
) -> list[str]:
    """Sends the request; asserts a 400 naming ``field`` and no change to any table."""
    before = await snapshot(session)
    headers = auth(token)
    if content is not None:
        headers["Content-Type"] = "application/json"
    r = await client.request(
        method, url, json=body, content=content, params=params, headers=headers
    )
    assert r.status_code == 400, r.text
    errors = field_errors(r)
    assert field in errors, errors
    assert await snapshot(session) == before
    return errors[field]


def text_with(bad: str) -> str:
    return f"x{bad}y"


# (case, token, method, url, body without the hostile field, hostile field)
TEXT_FIELDS = [
    (
        "seller full_name",
        "reseller",
        "POST",
        "/iam/admin/sellers",
        {"email": "new@sales.example"},
        "full_name",
    ),
    (
        "seller PATCH full_name",
        "reseller",
        "PATCH",
        "/iam/admin/sellers/{seller}",
        {"email": "new@sales.example"},
        "full_name",
    ),
    ("client name", "reseller", "PATCH", "/iam/clients/{client}", {}, "name"),
    ("client custom_id", "reseller", "PATCH", "/iam/clients/{client}", {}, "custom_id"),
    (
        "user name",
        "reseller",
        "POST",
        "/iam/users",
        {"email": "n@new.example", "password": STRONG_PASSWORD, "company": "New Co"},
        "name",
    ),
    (
        "client-user name",
        "reseller",
        "POST",
        "/iam/clients/{client}/client-users/create",
        {
            "username": "cu@new.example",
            "password": STRONG_PASSWORD,
            "user_role": {"id": 1, "name": "Administrators"},
        },
        "name",
    ),
    ("branding brandName", "reseller", "PUT", "/iam/reselling/settings", {}, "brandName"),
    (
        "AMQP exchange",
        "reseller",
        "POST",
        "/cloud/v1/user_actions/subscribe_amqp",
        {"connection_string": "amqp://u:p@127.0.0.1:5672/%2F"},
        "exchange",
    ),
]


class TestNulInTextFields:
    @pytest.mark.parametrize(
        ("token", "method", "url", "body", "field"),
        [c[1:] for c in TEXT_FIELDS],
        ids=[c[0] for c in TEXT_FIELDS],
    )
    async def test_is_a_400_naming_the_field(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        token: str,
        method: str,
        url: str,
        body: dict[str, Any],
        field: str,
    ):
        messages = await refused(
            client,
            session,
            method,
            world.url(url),
            world.token(token),
            field,
            body={**body, field: text_with(NUL)},
        )
        assert messages == ["Null characters are not allowed."]

    async def test_a_nested_value_is_named_by_its_path(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        body = {
            "email": "new@sales.example",
            "full_name": "S",
            "items": [{"name": "ok"}, {"name": text_with(NUL)}],
        }
        await refused(
            client,
            session,
            "POST",
            "/iam/admin/sellers",
            world.ls.reseller,
            "items.1.name",
            body=body,
        )

    async def test_a_key_is_refused_too(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        body = {"email": "new@sales.example", "full_name": "S", f"a{NUL}": 1}
        await refused(
            client, session, "POST", "/iam/admin/sellers", world.ls.reseller, "a\ufffd", body=body
        )


QUERY_FILTERS = [
    ("addendum plan_name", "/billing/org/v1/addendums", "plan_name"),
    ("addendum product_name", "/billing/org/v1/addendums", "product_name"),
    ("activity log path", "/iam/activity_log/requests", "path"),
    ("activity log remote_ip_address", "/iam/activity_log/requests", "remote_ip_address"),
]


class TestNulInQueryFilters:
    @pytest.mark.parametrize(
        ("url", "name"), [c[1:] for c in QUERY_FILTERS], ids=[c[0] for c in QUERY_FILTERS]
    )
    async def test_is_a_400_naming_the_parameter(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        url: str,
        name: str,
    ):
        messages = await refused(
            client, session, "GET", url, world.ls.operator, name, params={name: text_with(NUL)}
        )
        assert messages == ["Null characters are not allowed."]


class TestUnpairedSurrogates:
    async def test_in_a_checked_field(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        raw = b'{"email": "new@sales.example", "full_name": "x\\ud800"}'
        messages = await refused(
            client,
            session,
            "POST",
            "/iam/admin/sellers",
            world.ls.reseller,
            "full_name",
            content=raw,
        )
        assert messages == ["Unpaired surrogate characters are not allowed."]

    async def test_in_an_ignored_field(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        raw = b'{"email": "new@sales.example", "full_name": "S", "note": "\\udfff"}'
        await refused(
            client, session, "POST", "/iam/admin/sellers", world.ls.reseller, "note", content=raw
        )

    async def test_as_raw_utf8_bytes(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        raw = b'{"email": "new@sales.example", "full_name": "S", "note": "\xed\xa0\x80"}'
        await refused(
            client, session, "POST", "/iam/admin/sellers", world.ls.reseller, "note", content=raw
        )

    async def test_a_surrogate_pair_is_a_character(self, client: httpx.AsyncClient, world: World):
        raw = b'{"email": "new@sales.example", "full_name": "smile \\ud83d\\ude00"}'
        r = await client.post(
            "/iam/admin/sellers",
            content=raw,
            headers={**auth(world.ls.reseller), "Content-Type": "application/json"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["full_name"] == "smile \U0001f600"


PAGES = [
    ("activity log", "/iam/activity_log/requests", "reseller"),
    (
        "notification settings",
        "/iam/reselling/resellers/{reseller}/notification_settings",
        "reseller",
    ),
    ("cloud users", "/cloud/v1/users", "reseller"),
]
BEYOND_64_BITS = [str(2**63), str(2**64), "9" * 40]


class TestPagesBeyond64Bits:
    @pytest.mark.parametrize("value", BEYOND_64_BITS)
    @pytest.mark.parametrize("name", ["offset", "limit"])
    @pytest.mark.parametrize(("url", "token"), [c[1:] for c in PAGES], ids=[c[0] for c in PAGES])
    async def test_is_a_400_naming_the_parameter(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        url: str,
        token: str,
        name: str,
        value: str,
    ):
        await refused(
            client, session, "GET", world.url(url), world.token(token), name, params={name: value}
        )


# (case, method, url, body without the number, field)
INTEGER_FIELDS = [
    (
        "seller create reseller",
        "POST",
        "/iam/admin/sellers",
        {"email": "new@sales.example", "full_name": "S"},
        "reseller",
    ),
    ("client PATCH reseller", "PATCH", "/iam/clients/{client}", {}, "reseller"),
    ("client PATCH seller", "PATCH", "/iam/clients/{client}", {}, "seller"),
    (
        "user create reseller",
        "POST",
        "/iam/users",
        {"email": "n@new.example", "password": STRONG_PASSWORD, "company": "New Co"},
        "reseller",
    ),
]


class TestIntegersBeyondTheirColumn:
    @pytest.mark.parametrize("value", [2**31, 2**63, 2**70])
    @pytest.mark.parametrize(
        ("method", "url", "body", "field"),
        [c[1:] for c in INTEGER_FIELDS],
        ids=[c[0] for c in INTEGER_FIELDS],
    )
    async def test_is_a_400_naming_the_field(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        world: World,
        method: str,
        url: str,
        body: dict[str, Any],
        field: str,
        value: int,
    ):
        await refused(
            client,
            session,
            method,
            world.url(url),
            world.ls.operator,
            field,
            body={**body, field: value},
        )


class TestDatabaseRefusalsAreA400:
    """The safety net behind the checks: a value the database itself refuses."""

    @pytest.mark.parametrize("value", [2**63, 2**70, text_with(SURROGATE)])
    async def test_on_both_databases(self, session: AsyncSession, value: Any):
        column = Seller.full_name if isinstance(value, str) else Seller.reseller_id
        with pytest.raises(Exception) as raised:
            await session.execute(select(Seller.id).where(column == value))
        await session.rollback()
        error = to_api_error(raised.value)
        assert error.status_code == 400 and error.exception_class == "ValidationError"

    @pytest.mark.parametrize("value", [2**31, text_with(NUL)])
    async def test_on_postgresql(self, session: AsyncSession, dialect: str, value: Any):
        if dialect != "postgresql":
            pytest.skip("SQLite stores these")
        column = Seller.full_name if isinstance(value, str) else Seller.reseller_id
        with pytest.raises(Exception) as raised:
            await session.execute(select(Seller.id).where(column == value))
        await session.rollback()
        assert to_api_error(raised.value).status_code == 400


class TestDeepBodies:
    async def test_nesting_past_the_parser_limit_is_a_400(
        self, client: httpx.AsyncClient, world: World
    ):
        raw = b'{"full_name": ' + b"[" * 100_000 + b'"\\u0000"' + b"]" * 100_000 + b"}"
        r = await client.post(
            "/iam/admin/sellers",
            content=raw,
            headers={**auth(world.ls.reseller), "Content-Type": "application/json"},
        )
        assert r.status_code == 400, r.text

    async def test_a_deep_value_is_named_by_its_path(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        # As deep as a body may nest (max_json_depth, 64; deeper is refused as such).
        raw = (
            b'{"email": "n@sales.example", "full_name": "S", "note": '
            + b"[" * 63
            + b'"\\u0000"'
            + b"]" * 63
            + b"}"
        )
        await refused(
            client,
            session,
            "POST",
            "/iam/admin/sellers",
            world.ls.reseller,
            "note" + ".0" * 63,
            content=raw,
        )

    async def test_the_first_in_document_order_is_named(
        self, client: httpx.AsyncClient, session: AsyncSession, world: World
    ):
        raw = (
            b'{"email": "n@sales.example", "full_name": "S", "a": {"b": "\\u0000"}, "c\\u0000": 1}'
        )
        await refused(
            client, session, "POST", "/iam/admin/sellers", world.ls.reseller, "a.b", content=raw
        )
