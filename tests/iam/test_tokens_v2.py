"""API tokens at the provider's v2 paths, /iam/v2/clients/{clientId}/tokens[/{tokenId}]:
the v1 service in the v2 schema (docs/iam.md, "API tokens", "v2").

The rules themselves (roles, expiry, members) are v1's, tested in test_tokens.py; here the
schema, the tenancy of every v2 operation and Idempotency-Key on the v2 create."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey
from tests.factories import Landscape, auth, landscape, make_key, make_user
from tests.iam.accounts_helpers import fresh

ENGINEERS = {"id": 5, "name": "Engineers"}


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def url(client_id: int, token_id: int | None = None) -> str:
    base = f"/iam/v2/clients/{client_id}/tokens"
    return base if token_id is None else f"{base}/{token_id}"


BODY = {"name": "CI", "exp_date": None, "client_user": {"role": ENGINEERS}}


async def issue(client: httpx.AsyncClient, token: str, client_id: int) -> dict[str, object]:
    r = await client.post(url(client_id), json=BODY, headers=auth(token))
    assert r.status_code == 200, r.text
    return dict(r.json())


class TestSchema:
    async def test_create_answers_every_field_the_provider_requires(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        got = await issue(client, ls.client_admin, cid)
        token = str(got.pop("token"))
        assert token.startswith(f"{got['id']}_")
        # Never used yet: last_usage is the issue time (v1 leaves it out).
        assert got["last_usage"] == got["created"]
        assert got == {
            "id": got["id"],
            "name": "CI",
            "exp_date": None,
            "deleted": False,
            "expired": False,
            "created": got["created"],
            "last_usage": got["created"],
            "client_user": {
                "deleted": False,
                "user_id": ls.admin_user.id,
                "user_name": ls.admin_user.email,
                "user_email": ls.admin_user.email,
                "client_id": cid,
                "role": ENGINEERS,
            },
        }
        key = await fresh(session, ApiKey, int(str(got["id"])))
        assert key.role_id == 5 and token.split("_", 1)[1] not in key.secret_hash
        # The token authenticates, at a v1 path too: the same token.
        r = await client.get(url(cid, key.id), headers=auth(token))
        assert r.status_code == 200, r.text
        v1 = await client.get(f"/iam/clients/{cid}/tokens/{key.id}", headers=auth(token))
        assert v1.status_code == 200 and v1.json()["id"] == key.id

    async def test_a_used_token_shows_its_last_usage(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        cid = ls.client_account.id
        got = await issue(client, ls.client_admin, cid)
        used = await client.get(url(cid), headers=auth(str(got["token"])))
        assert used.status_code == 200, used.text
        r = await client.get(url(cid, int(str(got["id"]))), headers=auth(ls.client_admin))
        v1 = await client.get(
            f"/iam/clients/{cid}/tokens/{got['id']}", headers=auth(ls.client_admin)
        )
        assert r.json()["last_usage"] == v1.json()["last_usage"]

    async def test_a_cli_key_without_name_or_group_has_every_field(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        groupless = await make_user(session, ls.client_account, groups=())
        await make_key(session, groupless)
        await session.commit()
        r = await client.get(
            url(cid), params={"issued_by": groupless.id}, headers=auth(ls.operator)
        )
        assert r.status_code == 200, r.text
        [token] = r.json()
        assert token["name"] == "" and token["client_user"]["role"] == {}
        assert token["last_usage"] == token["created"]


class TestList:
    async def test_filters_and_members_as_v1(self, client: httpx.AsyncClient, ls: Landscape):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid)
        for params in ({}, {"role": "Engineers"}, {"issued_by": ls.admin_user.id}):
            v2 = await client.get(url(cid), params=params, headers=auth(ls.client_admin))
            v1 = await client.get(
                f"/iam/clients/{cid}/tokens", params=params, headers=auth(ls.client_admin)
            )
            assert v2.status_code == v1.status_code == 200
            assert [t["id"] for t in v2.json()] == [t["id"] for t in v1.json()]
        r = await client.get(url(cid), params={"role": "Engineers"}, headers=auth(ls.reseller))
        assert [t["id"] for t in r.json()] == [made["id"]]
        # A member sees only what it issued.
        r = await client.get(url(cid), headers=auth(ls.client_member))
        assert r.status_code == 200 and all(
            t["client_user"]["user_id"] == ls.member_user.id for t in r.json()
        )

    async def test_a_bad_filter_is_400_naming_it(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get(
            url(ls.client_account.id), params={"issued_by": "x"}, headers=auth(ls.client_admin)
        )
        assert r.status_code == 400 and "issued_by" in r.json()["errors"]


class TestTenancy:
    async def test_another_tenants_account_is_404_for_every_operation(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid)
        tid = int(str(made["id"]))
        other = auth(ls.other_reseller)
        for r in (
            await client.get(url(cid), headers=other),
            await client.get(url(cid, tid), headers=other),
            await client.delete(url(cid, tid), headers=other),
            await client.post(url(cid), json=BODY, headers=other),
        ):
            assert r.status_code == 404, r.text
            assert r.json()["message"] == "Account not found."
        r = await client.get(url(cid, tid), headers=auth(ls.client_admin))
        assert r.json()["deleted"] is False

    async def test_a_token_of_another_account_is_404_under_this_one(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        reseller_user = int(ls.reseller.split("_")[0])  # the reseller's own key
        cid = ls.client_account.id
        # The reseller sees both accounts, but its own key is not a token of the client's.
        for r in (
            await client.get(url(cid, reseller_user), headers=auth(ls.reseller)),
            await client.delete(url(cid, reseller_user), headers=auth(ls.reseller)),
        ):
            assert r.status_code == 404 and r.json()["message"] == "API token not found."
        r = await client.get(url(ls.reseller_account.id, reseller_user), headers=auth(ls.reseller))
        assert r.status_code == 200 and r.json()["deleted"] is False

    async def test_create_in_another_visible_account_is_403(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(url(ls.client_account.id), json=BODY, headers=auth(ls.reseller))
        assert r.status_code == 403, r.text


class TestDelete:
    async def test_delete_stops_the_token_at_once(self, client: httpx.AsyncClient, ls: Landscape):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid)
        tid, token = int(str(made["id"])), str(made["token"])
        r = await client.delete(url(cid, tid), headers=auth(ls.client_admin))
        assert r.status_code == 204 and r.content == b""
        assert (await client.get(url(cid), headers=auth(token))).status_code == 401
        r = await client.get(url(cid, tid), headers=auth(ls.client_admin))
        assert r.json()["deleted"] is True and r.json()["client_user"]["deleted"] is True
        r = await client.get(url(cid), params={"deleted": "true"}, headers=auth(ls.client_admin))
        assert [t["id"] for t in r.json()] == [tid]

    async def test_a_member_deletes_only_its_own(self, client: httpx.AsyncClient, ls: Landscape):
        cid = ls.client_account.id
        made = await issue(client, ls.client_admin, cid)
        r = await client.delete(url(cid, int(str(made["id"]))), headers=auth(ls.client_member))
        assert r.status_code == 403


class TestIdempotency:
    async def test_a_retry_replays_the_same_token(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        cid = ls.client_account.id
        headers = {**auth(ls.client_admin), "Idempotency-Key": "v2-create-1"}
        first = await client.post(url(cid), json=BODY, headers=headers)
        again = await client.post(url(cid), json=BODY, headers=headers)
        assert first.status_code == again.status_code == 200, again.text
        assert again.json() == first.json()
        named = (await session.execute(select(ApiKey.id).where(ApiKey.name == "CI"))).all()
        await session.commit()  # SQLite: let go of the read before the next request writes
        assert len(named) == 1
        # Another body under the same key is refused, not a second token.
        other = await client.post(url(cid), json={**BODY, "name": "CD"}, headers=headers)
        assert other.status_code == 422, other.text
