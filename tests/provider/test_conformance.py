"""Every answer of every operation that the provider also publishes matches the provider's
response schema (tests/provider/*.json, README.md), on both databases.

A case arranges data with the test helpers, calls the operation (several ways when the answer's
shape varies) and returns the answers; each is checked by assert_answer_matches. A new
operation of ours that the provider publishes needs a case here (test_has_a_case fails
naming it) or a reason in NOT_CHECKED.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import httpx
import pytest
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Branding
from tests.billing.helpers import addendum_row, insert_addendums
from tests.cloud.helpers import (
    BOX,
    CloudLandscape,
    cloud_landscape,
    make_listener,
    make_policy,
    make_prices,
)
from tests.events.helpers import make_subscription
from tests.factories import auth, make_key, make_seller, make_user
from tests.iam.accounts_helpers import STRONG_PASSWORD
from tests.iam.users_helpers import Cast, cast
from tests.provider.conformance import assert_answer_matches, in_provider
from tests.provider.extract import our_operations
from tests.web.lists import openapi

Case = Callable[[httpx.AsyncClient, AsyncSession], Awaitable[list[httpx.Response]]]
CASES: dict[tuple[str, str], Case] = {}

# Operations of ours the provider does not publish (nothing to compare with).
NOT_IN_PROVIDER = {
    ("GET", "/healthz"), ("GET", "/readyz"),
    ("DELETE", "/iam/clients/{clientId}"),  # the provider documents GET and PATCH only
    ("GET", "/iam/reselling/files/{name}"),  # serves uploaded branding files
    ("POST", "/iam/auth/set-password"),  # takes an invitation link's token (docs/iam.md)
}  # fmt: skip
# Operations the provider publishes that have no case, and why.
NOT_CHECKED: dict[tuple[str, str], str] = {}
# Documented differences from the provider's schema: a part of the error message -> why.
DIFFERENCES: dict[tuple[str, str], dict[str, str]] = {
    ("POST", "/iam/clients/{clientId}/tokens"): {
        "'last_usage' is a required property": (
            "docs/iam.md, API tokens: absent until the token is first used (not null)"
        ),
    },
    ("GET", "/iam/clients/{clientId}/tokens"): {
        "'name' is a required property": (
            "docs/iam.md, API tokens: a key made without a name (CLI) answers none"
        ),
        "'last_usage' is a required property": (
            "docs/iam.md, API tokens: absent until the token is first used (not null)"
        ),
    },
    ("GET", "/billing/org/v1/addendums"): {
        "'status_at_active_at' is a required property": (
            "docs/billing.md: present only with active_at (absent otherwise, not null)"
        ),
    },
    ("GET", "/billing/org/v1/addendums/{id}"): {
        "'status_at_active_at' is a required property": (
            "docs/billing.md: one addendum has no active_at, so never this field"
        ),
    },
}


def case(method: str, path: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[(method, path)] = fn
        return fn

    return register


OURS = sorted(our_operations(openapi()))  # (METHOD, path) of this service's OpenAPI


def ident(op: tuple[str, str]) -> str:
    return f"{op[0]} {op[1]}"


# -- iam ------------------------------------------------------------------------------------


@case("POST", "/iam/users")
async def create_user(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    seller = await make_seller(session, cl.ls.reseller_account)
    await session.commit()
    body = {
        "email": "owner@newshop.example",
        "password": STRONG_PASSWORD,
        "company": "New Shop Ltd",
        "name": "Olivia Owner",
        "phone": "+1 555 0100",
    }
    full = {
        "email": "full@newshop.example",
        "password": STRONG_PASSWORD,
        "company": "Full Shop Ltd",
        "name": "Fay Full",
        "lang": "de",
        "custom_id": "ext-42",
        "country_code": "de",
        "is_test": True,
        "seller": seller.id,
    }
    return [
        await client.post("/iam/users", json=b, headers=auth(cl.ls.reseller)) for b in (body, full)
    ]


@case("PATCH", "/iam/clients/{clientId}")
async def update_client(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    seller = await make_seller(session, cl.ls.reseller_account)
    await session.commit()
    url = f"/iam/clients/{cl.ls.client_account.id}"
    full = {
        "email": "billing@shop.example",
        "companyName": "Shop Renamed",
        "custom_id": "crm-7",
        "name": "Sam Shop",
        "phone": "+44 20 7946 0000",
        "is_test": True,
        "seller": seller.id,
    }
    return [
        await client.patch(url, json={}, headers=auth(cl.ls.reseller)),
        await client.patch(url, json=full, headers=auth(cl.ls.reseller)),
        await client.patch(url, json={}, headers=auth(cl.ls.operator)),
        # a top-level account: no reseller
        await client.patch(
            f"/iam/clients/{cl.ls.reseller_account.id}", json={}, headers=auth(cl.ls.operator)
        ),
    ]


@case("POST", "/iam/clients/{clientId}/client-users/create")
async def create_client_user(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/iam/clients/{cl.ls.client_account.id}/client-users/create"
    body = {
        "username": "engineer@shop.example",
        "password": STRONG_PASSWORD,
        "name": "Eve Engineer",
        "user_role": {"user_role": {"id": 5, "name": "Engineers"}},
    }
    admin = {
        "username": "admin2@shop.example",
        "password": STRONG_PASSWORD,
        "user_role": {"id": 1, "name": "Administrators"},
    }
    return [
        await client.post(url, json=body, headers=auth(cl.ls.reseller)),
        await client.post(url, json=admin, headers=auth(cl.ls.client_admin)),
    ]


TOKEN = {
    "name": "CI",
    "description": "deploys",
    "exp_date": "2099-01-01T12:00:00.000000Z",
    "client_user": {"role": {"id": 5, "name": "Engineers"}},
}


async def used_tokens(client: httpx.AsyncClient, cl: CloudLandscape) -> list[int]:
    """Two tokens of the client account (one of them bare), each used once (last_usage)."""
    url = f"/iam/clients/{cl.ls.client_account.id}/tokens"
    made = [
        (await client.post(url, json=b, headers=auth(cl.ls.client_admin))).json()
        for b in (TOKEN, {"name": "bare", "exp_date": None, "client_user": {}})
    ]
    for m in made:
        assert (await client.get(url, headers=auth(m["token"]))).status_code == 200
    return [m["id"] for m in made]


@case("POST", "/iam/clients/{clientId}/tokens")
async def create_token(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/iam/clients/{cl.ls.client_account.id}/tokens"
    return [
        await client.post(url, json=TOKEN, headers=auth(cl.ls.client_admin)),
        await client.post(
            url,
            json={"name": "m", "exp_date": None, "client_user": {}},
            headers=auth(cl.ls.client_member),
        ),
    ]


@case("GET", "/iam/clients/{clientId}/tokens")
async def list_tokens(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await used_tokens(client, cl)
    url = f"/iam/clients/{cl.ls.client_account.id}/tokens"
    # The unfiltered list also holds the landscape's keys, made without a name or a role.
    return [
        await client.get(url, headers=auth(cl.ls.client_admin)),
        await client.get(url, params={"role": "Engineers"}, headers=auth(cl.ls.reseller)),
    ]


@case("GET", "/iam/clients/{clientId}/tokens/{tokenId}")
async def read_token(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/iam/clients/{cl.ls.client_account.id}/tokens"
    return [
        await client.get(f"{url}/{tid}", headers=auth(cl.ls.client_admin))
        for tid in await used_tokens(client, cl)
    ]


@case("DELETE", "/iam/clients/{clientId}/tokens/{tokenId}")
async def delete_token(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/iam/clients/{cl.ls.client_account.id}/tokens"
    return [
        await client.delete(f"{url}/{tid}", headers=auth(cl.ls.client_admin))
        for tid in await used_tokens(client, cl)
    ]


V2_TOKENS = "/iam/v2/clients/{clientId}/tokens"


async def v2_tokens(
    client: httpx.AsyncClient, session: AsyncSession
) -> tuple[CloudLandscape, str, list[int]]:
    """The v2 tokens' URL of the client account and two new tokens there, one used and
    one never used (`last_usage` then the issue time); the account also holds a bare key
    of a user in no group (role `{}`) and the landscape's keys (no name, no role)."""
    cl = await cloud_landscape(session)
    groupless = await make_user(session, cl.ls.client_account, groups=())
    await make_key(session, groupless)
    await session.commit()
    url = f"/iam/v2/clients/{cl.ls.client_account.id}/tokens"
    admin = auth(cl.ls.client_admin)
    made = [(await client.post(url, json=TOKEN, headers=admin)).json() for _ in range(2)]
    assert (await client.get(url, headers=auth(made[0]["token"]))).status_code == 200
    return cl, url, [m["id"] for m in made]


@case("POST", V2_TOKENS)
async def create_token_v2(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/iam/v2/clients/{cl.ls.client_account.id}/tokens"
    return [
        await client.post(url, json=TOKEN, headers=auth(cl.ls.client_admin)),
        await client.post(
            url,
            json={"name": "m", "exp_date": None, "client_user": {}},
            headers=auth(cl.ls.client_member),
        ),
    ]


@case("GET", V2_TOKENS)
async def list_tokens_v2(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl, url, _ = await v2_tokens(client, session)
    return [
        await client.get(url, headers=auth(cl.ls.operator)),
        await client.get(url, params={"role": "Engineers"}, headers=auth(cl.ls.client_admin)),
    ]


@case("GET", V2_TOKENS + "/{tokenId}")
async def read_token_v2(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl, url, _ = await v2_tokens(client, session)
    every = (await client.get(url, headers=auth(cl.ls.operator))).json()
    assert len(every) >= 5
    return [await client.get(f"{url}/{t['id']}", headers=auth(cl.ls.operator)) for t in every]


@case("DELETE", V2_TOKENS + "/{tokenId}")
async def delete_token_v2(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl, url, ids = await v2_tokens(client, session)
    return [await client.delete(f"{url}/{tid}", headers=auth(cl.ls.client_admin)) for tid in ids]


@case("POST", "/iam/clients/invite_user")
async def invite_user(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    session.add(
        Branding(
            reseller_id=cl.ls.reseller_account.id,
            domain="panel.acme.example",
            public_settings={},
            mail_server={"host": "127.0.0.1", "port": "25", "tls": False, "login": ""},
            mail_password_encrypted=None,
        )
    )
    await session.commit()
    body = {
        "email": "new@shop.example",
        "user_role": {"id": 2},
        "client_id": cl.ls.client_account.id,
    }
    return [
        await client.post("/iam/clients/invite_user", json=body, headers=auth(cl.ls.client_admin)),
        await client.post(
            "/iam/clients/invite_user",
            json={**body, "email": "other@shop.example", "name": "O", "lang": "de"},
            headers=auth(cl.ls.reseller),
        ),
    ]


SELLER = {"email": "jane@sales.example", "full_name": "Jane Seller", "phone": "+1 (555) 0100"}


@case("POST", "/iam/admin/sellers")
async def create_seller(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.post("/iam/admin/sellers", json=SELLER, headers=auth(cl.ls.reseller)),
        await client.post(
            "/iam/admin/sellers",
            json={"email": "b@sales.example", "full_name": "Bare"},
            headers=auth(cl.ls.reseller),
        ),
    ]


@case("GET", "/iam/admin/sellers/{sellerId}")
async def read_seller(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    bare = await make_seller(session, cl.ls.reseller_account)
    await session.commit()
    made = await client.post("/iam/admin/sellers", json=SELLER, headers=auth(cl.ls.reseller))
    return [
        await client.get(f"/iam/admin/sellers/{sid}", headers=auth(cl.ls.reseller))
        for sid in (bare.id, made.json()["id"])
    ]


@case("PATCH", "/iam/admin/sellers/{sellerId}")
async def update_seller(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    seller = await make_seller(session, cl.ls.reseller_account)
    await session.commit()
    url = f"/iam/admin/sellers/{seller.id}"
    return [
        await client.patch(
            url,
            json={"email": "new@sales.example", "full_name": "New Name"},
            headers=auth(cl.ls.reseller),
        ),
        await client.patch(
            url, json={**SELLER, "phone": "+1 555 0101"}, headers=auth(cl.ls.reseller)
        ),
    ]


def branding(**mail: object) -> dict[str, object]:
    return {
        "domain": "Acme.example",
        "publicSettings": {
            "showApiDoc": True,
            "showStatusPage": "false",
            "showKnowledgeBase": False,
            "showTickets": True,
            "brandName": "Acme Cloud",
            "fromEmail": "noreply@acme.example",
            "websiteLink": "https://acme.example",
            "supportEmail": "help@acme.example",
            "supportPhone": "+1 555 0100",
            "agreementLink": "https://acme.example/terms",
            "entryBaseDomain": "panel.acme.example",
            "colors": {"header": "#000000", "primary": "#ff0000", "headerText": "#ffffff"},
        },
        "privateSettings": {
            "mailServer": {
                "tls": True,
                "host": "smtp.acme.example",
                "port": "587",
                "login": "mailer",
                "password": "smtp-Secret-1",
                **mail,
            }
        },
    }


def png() -> bytes:
    import io

    buf = io.BytesIO()
    Image.new("RGBA", (16, 16), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


@case("GET", "/iam/reselling/settings")
async def read_branding(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/reselling/settings"
    empty = await client.get(url, headers=auth(cl.ls.reseller))
    await client.put(url, json=branding(), headers=auth(cl.ls.reseller))
    return [empty, await client.get(url, headers=auth(cl.ls.reseller))]


@case("PUT", "/iam/reselling/settings")
async def put_branding(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/reselling/settings"
    return [
        await client.put(url, json=branding(), headers=auth(cl.ls.reseller)),
        await client.put(
            url, json={**branding(), "domain": "b.example"}, headers=auth(cl.ls.reseller)
        ),
    ]


@case("POST", "/iam/reselling/settings/upload")
async def upload_branding(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/reselling/settings/upload"
    return [
        await client.post(
            url, headers=auth(cl.ls.reseller), files={"logo": ("logo.png", png(), "image/png")}
        )
    ]


NOTIFICATIONS = "/iam/reselling/resellers/{resellerId}/notification_settings"


def notifications(reseller_id: int) -> str:
    return f"/iam/reselling/resellers/{reseller_id}/notification_settings"


async def a_notification(client: httpx.AsyncClient, cl: CloudLandscape) -> httpx.Response:
    return await client.post(
        notifications(cl.ls.reseller_account.id),
        headers=auth(cl.ls.reseller),
        json={"notification_type": "deletion_request", "email": "alerts@acme.example"},
    )


@case("POST", NOTIFICATIONS)
async def create_notification(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [await a_notification(client, cl)]


@case("GET", NOTIFICATIONS)
async def list_notifications(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = notifications(cl.ls.reseller_account.id)
    empty = await client.get(url, headers=auth(cl.ls.reseller))
    await a_notification(client, cl)
    return [empty, await client.get(url, headers=auth(cl.ls.reseller))]


@case("GET", f"{NOTIFICATIONS}/{{notificationSettingsId}}")
async def read_notification(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    nid = (await a_notification(client, cl)).json()["id"]
    url = f"{notifications(cl.ls.reseller_account.id)}/{nid}"
    return [await client.get(url, headers=auth(cl.ls.reseller))]


@case("PATCH", f"{NOTIFICATIONS}/{{notificationSettingsId}}")
async def update_notification(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    nid = (await a_notification(client, cl)).json()["id"]
    url = f"{notifications(cl.ls.reseller_account.id)}/{nid}"
    return [await client.patch(url, json={"enabled": False}, headers=auth(cl.ls.reseller))]


@case("DELETE", f"{NOTIFICATIONS}/{{notificationSettingsId}}")
async def delete_notification(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    nid = (await a_notification(client, cl)).json()["id"]
    url = f"{notifications(cl.ls.reseller_account.id)}/{nid}"
    return [await client.delete(url, headers=auth(cl.ls.reseller))]


@case("GET", "/iam/activity_log/requests")
async def activity_log(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/activity_log/requests"
    empty = await client.get(url, headers=auth(cl.ls.reseller))
    await client.post("/iam/admin/sellers?dry=1", json=SELLER, headers=auth(cl.ls.reseller))
    await client.get("/iam/admin/sellers/999999", headers=auth(cl.ls.reseller))
    return [
        empty,
        await client.get(url, headers=auth(cl.ls.reseller)),
        await client.get(url, params={"limit": 1}, headers=auth(cl.ls.reseller)),
    ]


# -- billing --------------------------------------------------------------------------------


@case("GET", "/billing/org/v1/addendums")
async def addendums(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    cid = cl.ls.client_account.id
    await insert_addendums(
        session,
        [
            addendum_row(cid),
            addendum_row(
                cid,
                product_id=2,
                currency_id=2,
                status="paused",
                reseller_id=cl.ls.reseller_account.id,
                payer_id=cid,
            ),
        ],
    )
    url = "/billing/org/v1/addendums"
    return [
        await client.get(url, headers=auth(cl.ls.operator)),
        await client.get(url, headers=auth(cl.ls.client_admin)),
        await client.get(url, params={"limit": 1}, headers=auth(cl.ls.reseller)),
        await client.get(
            url, params={"active_at": "2025-05-15T12:00:00Z"}, headers=auth(cl.ls.operator)
        ),
    ]


# -- cloud ----------------------------------------------------------------------------------


def listeners(cl: CloudLandscape) -> str:
    return f"/cloud/v1/lblisteners/{cl.project}/{cl.region}"


async def two_listeners(session: AsyncSession, cl: CloudLandscape) -> list[str]:
    return [
        await make_listener(session, cl.project, cl.region),
        await make_listener(
            session,
            cl.project,
            cl.region,
            secret_id=None,
            stats=None,
            user_list=[],
            allowed_cidrs=None,
            insert_headers={},
            timeout_client_data=None,
            timeout_member_connect=None,
        ),
    ]


@case("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}")
async def list_listeners(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    empty = await client.get(listeners(cl), headers=auth(cl.ls.client_member))
    await two_listeners(session, cl)
    return [
        empty,
        await client.get(listeners(cl), headers=auth(cl.ls.client_member)),
        await client.get(
            listeners(cl), params={"show_stats": "true"}, headers=auth(cl.ls.client_member)
        ),
    ]


@case("GET", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")
async def read_listener(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.get(f"{listeners(cl)}/{lid}", params=params, headers=auth(cl.ls.client_member))
        for lid in await two_listeners(session, cl)
        for params in ({}, {"show_stats": "true"})
    ]


@case("PATCH", "/cloud/v1/lblisteners/{project_id}/{region_id}/{listener_id}")
async def rename_listener(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.patch(
            f"{listeners(cl)}/{lid}", json={"name": "web-1"}, headers=auth(cl.ls.client_admin)
        )
        for lid in await two_listeners(session, cl)
    ]


V2_LISTENERS = "/cloud/v2/lblisteners/{project_id}/{region_id}/{listener_id}"


async def three_tasks(
    client: httpx.AsyncClient, session: AsyncSession, cl: CloudLandscape
) -> list[str]:
    """Tasks of v2 PATCHes: one FINISHED, one ERROR, one FINISHED and acknowledged."""
    lid = await make_listener(session, cl.project, cl.region)
    path = f"/cloud/v2/lblisteners/{cl.project}/{cl.region}/{lid}"
    made = []
    for body in ({"name": "web-1"}, {"admin_state_up": False}, {"connection_limit": -1}):
        r = await client.patch(path, json=body, headers=auth(cl.ls.client_admin))
        made += r.json()["tasks"]
    r = await client.post(
        f"/cloud/v1/tasks/{made[2]}/acknowledge", headers=auth(cl.ls.client_admin)
    )
    assert r.status_code == 200, r.text
    return made


@case("PATCH", V2_LISTENERS)
async def update_listener(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    bodies = [
        {"name": "web-1"},
        {"allowed_cidrs": None, "user_list": None, "timeout_client_data": None},
    ]
    return [
        await client.patch(
            f"/cloud/v2/lblisteners/{cl.project}/{cl.region}/{lid}",
            json=body,
            headers=auth(cl.ls.client_admin),
        )
        for lid, body in zip(await two_listeners(session, cl), bodies, strict=True)
    ]


@case("GET", "/cloud/v1/tasks")
async def list_tasks(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await three_tasks(client, session, cl)
    return [
        await client.get("/cloud/v1/tasks", params=params, headers=auth(cl.ls.client_member))
        for params in ({}, {"state": "ERROR"}, {"limit": 1, "offset": 5})
    ]


@case("GET", "/cloud/v1/tasks/{task_id}")
async def read_task(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.get(f"/cloud/v1/tasks/{tid}", headers=auth(cl.ls.client_member))
        for tid in await three_tasks(client, session, cl)
    ]


@case("POST", "/cloud/v1/tasks/{task_id}/acknowledge")
async def acknowledge_task(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.post(f"/cloud/v1/tasks/{tid}/acknowledge", headers=auth(cl.ls.client_member))
        for tid in await three_tasks(client, session, cl)
    ]


@case("POST", "/cloud/v1/tasks/acknowledge_all")
async def acknowledge_all_tasks(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await three_tasks(client, session, cl)
    path = "/cloud/v1/tasks/acknowledge_all"
    return [
        await client.post(path, params=params, headers=auth(cl.ls.client_admin))
        for params in ({"project_id": cl.project, "region_id": cl.region}, {})
    ]


CRON = {
    "type": "cron", "id": "sch-cron-1", "max_quantity": 7, "owner": "lifecycle_policy",
    "owner_id": 1, "user_id": 77, "retention_time": {"days": 7, "hours": 0, "minutes": 0,
                                                     "weeks": 1},
    "resource_name_template": "snap-{volume_id}", "minute": "0,30", "hour": "2", "day": "*",
    "month": "*", "week": "*", "day_of_week": "mon,fri", "timezone": "Europe/Luxembourg",
}  # fmt: skip
INTERVAL = {
    "type": "interval", "id": "sch-int-1", "max_quantity": 3, "owner": "lifecycle_policy",
    "owner_id": 1, "user_id": 77, "weeks": 0, "days": 1, "hours": 12, "minutes": 30,
}  # fmt: skip
VOLUMES = [{"volume_id": "726ecfcc-7fd0-4e30-a86e-7892524aa483", "volume_name": "data"}]


@case("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}/{policy_id}")
async def read_policy(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    pid = await make_policy(
        session, cl.project, cl.region, schedules=[CRON, INTERVAL], volumes=VOLUMES
    )
    url = f"/cloud/v1/lifecycle_policy/{cl.project}/{cl.region}/{pid}"
    return [
        await client.get(url, params=params, headers=auth(cl.ls.client_member))
        for params in ({}, {"need_volumes": "true"}, {"need_volumes": "false"})
    ]


@case("POST", "/cloud/v2/pricing/{project_id}/{region_id}/k8s/clusters")
async def price_cluster(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await make_prices(
        session,
        cl.region,
        currency_code="EUR",
        flavors={"g1-standard-2-4": "0.0432"},
        volume_types={"standard": "0.000068"},
        public_ipv4_per_hour="0.004",
        discount_percent="10",
        tax_percent="20",
    )
    url = f"/cloud/v2/pricing/{cl.project}/{cl.region}/k8s/clusters"
    pool = {
        "flavor_id": "g1-standard-2-4",
        "node_count": 3,
        "boot_volume_size": 50,
        "boot_volume_type": "standard",
        "is_public_ipv4": True,
    }
    unknown = {**pool, "flavor_id": "no-such-flavor"}
    bare = f"/cloud/v2/pricing/{cl.project}/{cl.other_region}/k8s/clusters"  # no catalogue
    return [
        await client.post(url, json={"pools": pools}, headers=auth(cl.ls.client_member))
        for pools in ([pool], [pool, unknown])
    ] + [await client.post(bare, json={"pools": [pool]}, headers=auth(cl.ls.client_member))]


@case("GET", "/cloud/v1/users")
async def cloud_users(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.get("/cloud/v1/users", headers=auth(cl.ls.client_admin)),
        await client.get("/cloud/v1/users", params={"limit": 1}, headers=auth(cl.ls.client_member)),
    ]


ACTIONS = "/cloud/v1/user_actions"
CONN = "amqps://events:s3cret@broker.example:5671/prod"


async def subscribed(session: AsyncSession) -> tuple[CloudLandscape, int]:
    cl = await cloud_landscape(session)
    return cl, (await make_subscription(session, BOX, cl.ls.client_account, CONN)).id


@case("POST", "/cloud/v1/user_actions/subscribe_amqp")
async def subscribe(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.post(
            f"{ACTIONS}/subscribe_amqp",
            json={"connection_string": CONN},
            headers=auth(cl.ls.client_admin),
        )
    ]


@case("POST", "/cloud/v1/user_actions/subscribe_amqp_test")
async def subscribe_test(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    from tests.events.conftest import RABBIT_URL

    try:
        socket.create_connection(("127.0.0.1", 5672), 1).close()
    except OSError:
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")
    cl = await cloud_landscape(session)
    return [
        await client.post(
            f"{ACTIONS}/subscribe_amqp_test",
            json={"connection_string": RABBIT_URL},
            headers=auth(cl.ls.client_admin),
        )
    ]


@case("POST", "/cloud/v1/user_actions/unsubscribe_amqp")
async def unsubscribe(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl, _ = await subscribed(session)
    return [await client.post(f"{ACTIONS}/unsubscribe_amqp", headers=auth(cl.ls.client_admin))]


@case("GET", "/cloud/v1/user_actions/amqp_subscriptions_list")
async def list_subscriptions(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"{ACTIONS}/amqp_subscriptions_list"
    empty = await client.get(url, headers=auth(cl.ls.client_member))
    await make_subscription(
        session, BOX, cl.ls.client_account, CONN, exchange=None, routing_key=None
    )
    return [
        empty,
        await client.get(url, headers=auth(cl.ls.client_member)),
        await client.get(url, headers=auth(cl.ls.operator)),
    ]


@case("GET", "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}")
async def read_subscription(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl, sid = await subscribed(session)
    return [
        await client.get(f"{ACTIONS}/amqp_subscriptions/{sid}", headers=auth(cl.ls.client_member))
    ]


@case("PATCH", "/cloud/v1/user_actions/amqp_subscriptions/{subscription_id}")
async def update_subscription(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl, sid = await subscribed(session)
    url = f"{ACTIONS}/amqp_subscriptions/{sid}"
    admin = auth(cl.ls.client_admin)
    return [
        await client.patch(url, json={"routing_key": "audit"}, headers=admin),
        await client.patch(url, json={}, headers=admin),
    ]


WEBHOOK = {
    "url": "https://hooks.shop.example/user-actions",
    "auth_header_name": "Authorization",
    "auth_header_value": "Bearer s3cret",
}


@case("POST", "/cloud/v1/user_actions/subscribe")
async def subscribe_webhook(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.post(f"{ACTIONS}/subscribe", json=WEBHOOK, headers=auth(cl.ls.client_admin))
    ]


@case("POST", "/cloud/v1/user_actions/unsubscribe")
async def unsubscribe_webhook(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await client.post(f"{ACTIONS}/subscribe", json=WEBHOOK, headers=auth(cl.ls.client_admin))
    return [await client.post(f"{ACTIONS}/unsubscribe", headers=auth(cl.ls.client_admin))]


@case("GET", "/cloud/v1/user_actions/subscriptions_list")
async def list_webhooks(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"{ACTIONS}/subscriptions_list"
    empty = await client.get(url, headers=auth(cl.ls.client_member))
    await client.post(f"{ACTIONS}/subscribe", json=WEBHOOK, headers=auth(cl.ls.client_admin))
    return [
        empty,
        await client.get(url, headers=auth(cl.ls.client_member)),
        await client.get(url, params={"limit": 1}, headers=auth(cl.ls.operator)),
    ]


# -- reads of h14-clients (GET /iam/clients, /me, /{clientId}, one log entry, one addendum) --


@case("GET", "/iam/clients")
async def list_clients(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/clients"
    return [
        await client.get(url, headers=auth(cl.ls.reseller)),
        await client.get(url, headers=auth(cl.ls.operator)),
        await client.get(url, params={"limit": 1}, headers=auth(cl.ls.operator)),
        await client.get(url, params={"limit": 1, "offset": 1}, headers=auth(cl.ls.operator)),
    ]


@case("GET", "/iam/clients/{clientId}")
async def get_client(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.get(f"/iam/clients/{cl.ls.client_account.id}", headers=auth(cl.ls.reseller)),
        await client.get(f"/iam/clients/{cl.ls.reseller_account.id}", headers=auth(cl.ls.operator)),
    ]


@case("GET", "/iam/clients/me")
async def account_details(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    return [
        await client.get("/iam/clients/me", headers=auth(token))
        for token in (cl.ls.reseller, cl.ls.client_member)
    ]


@case("GET", "/iam/activity_log/requests/{id}")
async def activity_log_entry(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    await client.get("/iam/admin/sellers/999999", headers=auth(cl.ls.reseller))
    [entry] = (await client.get("/iam/activity_log/requests", headers=auth(cl.ls.reseller))).json()[
        "result"
    ]
    return [
        await client.get(f"/iam/activity_log/requests/{entry['id']}", headers=auth(cl.ls.reseller))
    ]


@case("GET", "/billing/org/v1/addendums/{id}")
async def addendum(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    row = addendum_row(cl.ls.client_account.id)
    await insert_addendums(session, [row])
    return [
        await client.get(f"/billing/org/v1/addendums/{row['id']}", headers=auth(cl.ls.client_admin))
    ]


# -- users, client users and sellers of h14-users -------------------------------------------


async def varied_users(session: AsyncSession) -> Cast:
    """The users helpers' cast, plus users whose optional values are set, or in no group."""
    c = await cast(session)
    await make_user(
        session,
        c.ls.client_account,
        groups=(2,),
        name="Nina Named",
        phone="+49 30 1234",
        company="Shop GmbH",
        lang="de",
        sso_auth=True,
        two_fa=True,
        auth_types=["password", "sso"],
        activated=False,
    )
    await make_user(session, c.ls.client_account, groups=())
    await session.commit()
    return c


@case("GET", "/iam/users")
async def list_users(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    c = await varied_users(session)
    url = "/iam/users"
    admin = auth(c.ls.client_admin)
    return [
        await client.get(url, headers=admin),  # no limit: count and results only
        await client.get(url, params={"limit": 2}, headers=admin),  # next
        await client.get(url, params={"limit": 2, "offset": 2}, headers=admin),  # previous
        await client.get(url, params={"limit": 1, "offset": 1}, headers=admin),  # both
        await client.get(url, params={"offset": 99}, headers=admin),  # no results
        await client.get(url, headers=auth(c.ls.reseller)),
        await client.get(url, headers=auth(c.ls.operator)),
    ]


@case("GET", "/iam/users/{userId}")
async def read_user(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    c = await varied_users(session)
    listed = (await client.get("/iam/users", headers=auth(c.ls.client_admin))).json()
    return [
        await client.get(f"/iam/users/{u['id']}", headers=auth(c.ls.client_member))
        for u in listed["results"]
    ] + [
        await client.get(f"/iam/users/{c.reseller_user.id}", headers=auth(c.ls.reseller)),
        await client.get(f"/iam/users/{c.operator_user.id}", headers=auth(c.ls.operator)),
        await client.get(f"/iam/users/{c.foreign_admin.id}", headers=auth(c.ls.operator)),
    ]


@case("PATCH", "/iam/users/{userId}")
async def update_user(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    c = await cast(session)
    url = f"/iam/users/{c.ls.member_user.id}"
    member = auth(c.ls.client_member)
    return [
        await client.patch(url, json={}, headers=member),
        await client.patch(
            url,
            json={
                "name": "Mia Member",
                "phone": "+49 30 1234",
                "lang": "de",
                "auth_types": ["password", "sso"],
            },
            headers=member,
        ),
        await client.patch(url, json={"phone": None, "name": None}, headers=member),
        await client.patch(
            url, json={"email": "mia@shop.example"}, headers=auth(c.ls.client_admin)
        ),
        await client.patch(
            f"/iam/users/{c.reseller_user.id}", json={"name": "Rita"}, headers=auth(c.ls.reseller)
        ),
    ]


@case("DELETE", "/iam/users/{userId}")
async def delete_user(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    c = await cast(session)
    return [
        await client.delete(f"/iam/users/{c.ls.member_user.id}", headers=auth(c.ls.reseller)),
        await client.delete(f"/iam/users/{c.foreign_admin.id}", headers=auth(c.ls.operator)),
    ]


def client_user(account_id: int, user_id: int) -> str:
    return f"/iam/clients/{account_id}/client-users/{user_id}"


@case("GET", "/iam/clients/{clientId}/client-users/{userId}")
async def read_client_user(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    c = await cast(session)
    loner = await make_user(session, c.ls.client_account, groups=())  # no user_role at all
    await session.commit()
    account = c.ls.client_account.id
    return [
        await client.get(client_user(account, uid), headers=auth(c.ls.client_admin))
        for uid in (c.ls.member_user.id, c.ls.admin_user.id, c.boss.id, loner.id)
    ]


@case("PUT", "/iam/clients/{clientId}/client-users/{userId}")
async def change_client_user(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    c = await cast(session)
    url = client_user(c.ls.client_account.id, c.ls.member_user.id)
    return [
        await client.put(
            url, json={"user_role": {"id": 5, "name": "Engineers"}}, headers=auth(c.ls.client_admin)
        ),
        await client.put(
            url,
            json={"user_role": {"id": 1, "name": "Administrators"}},
            headers=auth(c.ls.reseller),
        ),
    ]


@case("DELETE", "/iam/clients/{clientId}/client-users/{userId}")
async def revoke_client_user(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    c = await cast(session)
    account = c.ls.client_account.id
    return [
        await client.delete(
            client_user(account, c.ls.member_user.id), headers=auth(c.ls.client_admin)
        ),
        await client.delete(client_user(account, c.boss.id), headers=auth(c.ls.operator)),
    ]


@case("GET", "/iam/admin/sellers")
async def list_sellers(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = "/iam/admin/sellers"
    reseller = auth(cl.ls.reseller)
    empty = [
        await client.get(url, headers=reseller),
        await client.get(url, params={"limit": 5}, headers=reseller),
    ]
    await make_seller(session, cl.ls.reseller_account, phone="+1 555 0100", activated=True)
    await make_seller(session, cl.ls.reseller_account, deleted=True)
    (await make_seller(session, cl.ls.reseller_account)).company = None  # the reseller's name
    await make_seller(session, cl.ls.other_reseller_account)
    await session.commit()
    return [
        *empty,
        await client.get(url, headers=reseller),  # an array
        await client.get(url, params={"limit": 2}, headers=reseller),  # a page: next
        await client.get(url, params={"limit": 1, "offset": 1}, headers=reseller),  # both
        await client.get(url, params={"limit": 2, "offset": 2}, headers=reseller),
        await client.get(url, headers=auth(cl.ls.operator)),
    ]


@case("DELETE", "/iam/admin/sellers/{sellerId}")
async def delete_seller(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    mine = await make_seller(session, cl.ls.reseller_account)
    other = await make_seller(session, cl.ls.other_reseller_account)
    await session.commit()
    return [
        await client.delete(f"/iam/admin/sellers/{mine.id}", headers=auth(cl.ls.reseller)),
        await client.delete(f"/iam/admin/sellers/{other.id}", headers=auth(cl.ls.operator)),
    ]


# -- cloud reads of h14-cloudreads (lifecycle policy list, the user-action log) -------------


@case("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}")
async def list_policies(client: httpx.AsyncClient, session: AsyncSession) -> list[httpx.Response]:
    cl = await cloud_landscape(session)
    url = f"/cloud/v1/lifecycle_policy/{cl.project}/{cl.region}"
    member = auth(cl.ls.client_member)
    empty = await client.get(url, headers=member)
    await make_policy(session, cl.project, cl.region, schedules=[CRON, INTERVAL], volumes=VOLUMES)
    await make_policy(session, cl.project, cl.region, name="bare", status="paused")
    return [
        empty,
        *[
            await client.get(url, params=params, headers=member)
            for params in (
                {},
                {"need_volumes": "true"},
                {"need_volumes": "false"},
                {"limit": 1, "offset": 1},
            )
        ],
        await client.get(url, headers=auth(cl.ls.operator)),
    ]


@case("GET", "/cloud/v1/user_actions")
async def user_actions_log(
    client: httpx.AsyncClient, session: AsyncSession
) -> list[httpx.Response]:
    from cloudadmin.events.user_actions import Resource
    from tests.cloud.test_user_actions_log import act

    cl = await cloud_landscape(session)
    admin = auth(cl.ls.client_admin)
    empty = await client.get(ACTIONS, headers=admin)
    lid = await make_listener(session, cl.project, cl.region)
    await client.patch(
        f"{listeners(cl)}/{lid}", json={"name": "renamed"}, headers={**admin, "User-Agent": "ua/2"}
    )
    # Recorded without project, region or search field (an account-level action).
    await act(
        session,
        cl.ls.client_account,
        action_type="create",
        api_group="user",
        resources=[Resource("user", "u-5")],
    )
    return [
        empty,
        await client.get(ACTIONS, headers=admin),
        await client.get(ACTIONS, params={"limit": 1, "offset": 1}, headers=admin),
        await client.get(
            ACTIONS, params={"order_by": "asc", "api_group": "lblistener"}, headers=admin
        ),
        await client.get(ACTIONS, headers=auth(cl.ls.reseller)),
        await client.get(ACTIONS, headers=auth(cl.ls.operator)),
    ]


# -- the checks ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", OURS, ids=ident)
def test_has_a_case(op: tuple[str, str]) -> None:
    """Each operation of ours is checked against the provider, or says why not."""
    if op in NOT_IN_PROVIDER:
        assert not in_provider(*op), f"{ident(op)} is in the provider now: write a case"
        return
    assert in_provider(*op), f"{ident(op)} is not in the provider: add it to NOT_IN_PROVIDER"
    assert op in CASES or op in NOT_CHECKED, f"{ident(op)} has no conformance case"


def test_cases_name_operations_of_ours() -> None:
    assert set(CASES) <= set(OURS), set(CASES) - set(OURS)


@pytest.mark.parametrize("op", sorted(CASES), ids=ident)
async def test_answers_match_provider(
    op: tuple[str, str], client: httpx.AsyncClient, session: AsyncSession
) -> None:
    answers = await CASES[op](client, session)
    assert answers
    for answer in answers:
        assert answer.status_code < 300, answer.text
        assert answer.request.method == op[0]
        assert_answer_matches(answer, op[1], DIFFERENCES.get(op, {}))
