"""The walk's cases for ``client.iam``: the account overview, users and API tokens, read
for every kind of caller of the demo landscape."""

from __future__ import annotations

from typing import Any

import gcore
import pytest

from tests.sdk.walk import CLIENT, OTHER_CLIENT, Demo, covers
from tests.waiting import until

# The demo's callers and the account each one's overview is of (demo/landscape.py).
ACCOUNT_OF = {
    "operator": 900,
    "reseller": 1000,
    "client_admin": CLIENT,
    "client_member": CLIENT,
    "engineer": CLIENT,
    "other_client_admin": OTHER_CLIENT,
}
# Users of each client in the demo.
DEMO_USERS = {900: {1}, 1000: {10}, CLIENT: {20, 21, 22, 23}, OTHER_CLIENT: {30, 31}}


@covers("iam.get_account_overview")
async def account_overview(demo: Demo) -> list[Any]:
    parsed = []
    for kind, account in ACCOUNT_OF.items():
        overview = await demo.sdk(kind).iam.get_account_overview()
        assert overview.id == account, (kind, overview.id)
        parsed.append(overview)
    return parsed


@covers("iam.users.list", "iam.users.get")
async def users(demo: Demo) -> list[Any]:
    parsed: list[Any] = []
    for kind in ("operator", "reseller", "client_admin", "other_client_admin"):
        account = ACCOUNT_OF[kind]
        sdk = demo.sdk(kind)
        page = await sdk.iam.users.list()
        walked = [u async for u in sdk.iam.users.list(limit=1)]  # a page per user
        assert [u.id for u in walked] == [u.id for u in page.results]
        assert DEMO_USERS[account] <= {u.id for u in walked}, (kind, [u.id for u in walked])
        parsed += [*page.results, *walked]
        for user in walked:
            got = await sdk.iam.users.get(user.id)
            assert got.id == user.id and got.email == user.email
            parsed.append(got)
    return parsed


@covers("iam.users.update")
async def update_user(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    changed = await sdk.iam.users.update(21, name="Carl Clerk-Keeper", lang="en", phone=None)
    assert changed.name == "Carl Clerk-Keeper" and changed.lang == "en"
    read = await sdk.iam.users.get(21)
    assert read.name == "Carl Clerk-Keeper"
    back = await sdk.iam.users.update(21, name="Carl Clerk", lang="de")
    assert back.lang == "de"
    return [changed, read, back]


@covers("iam.users.invite", "iam.users.delete")
async def invite_and_remove(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    invited = await sdk.iam.users.invite(
        client_id=CLIENT,
        email="new.hire@shop.example",
        user_role={"id": 2, "name": "Users"},
        lang="en",
        name="New Hire",
    )
    assert invited.user_id is not None
    member = await sdk.iam.users.get(invited.user_id)
    assert member.email == "new.hire@shop.example"
    await until(
        lambda: any("new.hire@shop.example" in to for to, _ in demo.mails),
        "the invitation reaches the reseller's mail server",
    )
    members = [u async for u in sdk.iam.users.list()]
    assert invited.user_id in {u.id for u in members}
    await sdk.iam.users.delete(invited.user_id, client_id=CLIENT)
    left = [u async for u in sdk.iam.users.list()]
    assert invited.user_id not in {u.id for u in left}
    return [invited, member, *left]


@covers("iam.api_tokens.create", "iam.api_tokens.list", "iam.api_tokens.get")
async def api_tokens(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    created = await sdk.iam.api_tokens.create(
        CLIENT,
        client_user={"role": {"id": 5, "name": "Engineers"}},
        exp_date=None,
        name="ci deploys",
        description="made by the SDK walk",
    )
    tokens = await sdk.iam.api_tokens.list(CLIENT)
    ids = {t.id for t in tokens}
    assert {3, 4, 5} <= ids, ids  # the demo's keys of client 2001's users
    assert created.token is not None
    got = [await sdk.iam.api_tokens.get(t.id, client_id=CLIENT) for t in tokens]
    new = next(t for t in got if t.name == "ci deploys")
    assert new.client_user.role.name == "Engineers" and new.exp_date is None
    # The token authenticates as its user would.
    async with gcore.AsyncGcore(
        api_key=created.token,
        base_url=demo.base_url,
        max_retries=0,
        _strict_response_validation=True,
    ) as own:
        overview = await own.iam.get_account_overview()
    assert overview.id == CLIENT
    return [created, *tokens, *got, overview]


@covers("iam.api_tokens.create", "iam.api_tokens.delete", "iam.api_tokens.list")
async def delete_api_token(demo: Demo) -> list[Any]:
    sdk = demo.sdk("client_admin")
    created = await sdk.iam.api_tokens.create(
        CLIENT, client_user={"role": {"id": 2, "name": "Users"}}, exp_date=None, name="short"
    )
    made = [t for t in await sdk.iam.api_tokens.list(CLIENT) if t.name == "short"]
    assert len(made) == 1
    await sdk.iam.api_tokens.delete(made[0].id, client_id=CLIENT)
    assert made[0].id not in {t.id for t in await sdk.iam.api_tokens.list(CLIENT)}
    deleted = await sdk.iam.api_tokens.list(CLIENT, deleted=True)
    assert made[0].id in {t.id for t in deleted}
    with pytest.raises(gcore.AuthenticationError):
        async with gcore.AsyncGcore(
            api_key=created.token or "", base_url=demo.base_url, max_retries=0
        ) as own:
            await own.iam.get_account_overview()
    return [created, *made, *deleted]
