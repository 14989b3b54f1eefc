"""Notification settings of a reseller: operations 9-11 (and read, delete)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import NotificationSetting
from tests.factories import Landscape, auth, landscape
from tests.iam.accounts_helpers import count, events

KEYS = {"id", "reseller", "notification_type", "email", "enabled"}


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def base(reseller_id: int) -> str:
    return f"/iam/reselling/resellers/{reseller_id}/notification_settings"


async def add(
    session: AsyncSession,
    reseller_id: int,
    email: str,
    kind: str = "failed_login",
    enabled: bool = True,
) -> int:
    row = NotificationSetting(
        reseller_id=reseller_id, email=email, notification_type=kind, enabled=enabled
    )
    session.add(row)
    await session.flush()
    ident = row.id
    await session.commit()
    return ident


class TestCreate:
    async def test_reseller_creates_with_enabled_by_default(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        rid = ls.reseller_account.id
        r = await client.post(
            base(rid),
            headers=auth(ls.reseller),
            json={"notification_type": "deletion_request", "email": "alerts@acme.example"},
        )
        assert r.status_code == 201, r.text
        got = r.json()
        assert set(got) == KEYS
        assert got["reseller"] == rid and got["enabled"] is True
        assert got["notification_type"] == "deletion_request"
        assert got["email"] == "alerts@acme.example"
        read = await client.get(f"{base(rid)}/{got['id']}", headers=auth(ls.reseller))
        assert read.json() == got

    async def test_enabled_false(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(
            base(ls.reseller_account.id),
            headers=auth(ls.reseller),
            json={"notification_type": "failed_login", "email": "a@acme.example", "enabled": False},
        )
        assert r.status_code == 201
        assert r.json()["enabled"] is False

    @pytest.mark.parametrize(
        ("over", "field"),
        [
            ({"notification_type": "weekly_report"}, "notification_type"),
            ({"email": "not-an-email"}, "email"),
            ({"email": "a" * 243 + "@example.com"}, "email"),
            ({"enabled": "perhaps"}, "enabled"),
            ({"enabled": None}, "enabled"),
        ],
    )
    async def test_invalid_body_is_400(
        self, client: httpx.AsyncClient, ls: Landscape, over: dict[str, object], field: str
    ):
        body = {"notification_type": "failed_login", "email": "a@acme.example", **over}
        r = await client.post(base(ls.reseller_account.id), headers=auth(ls.reseller), json=body)
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    async def test_email_of_254_characters_is_accepted(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        email = "a" * 63 + "@" + ".".join(["b" * 60, "c" * 60, "d" * 60]) + ".example"
        assert len(email) == 254
        r = await client.post(
            base(ls.reseller_account.id),
            headers=auth(ls.reseller),
            json={"notification_type": "failed_login", "email": email},
        )
        assert r.status_code == 201, r.text

    @pytest.mark.parametrize("field", ["notification_type", "email"])
    async def test_required_fields(self, client: httpx.AsyncClient, ls: Landscape, field: str):
        body = {"notification_type": "failed_login", "email": "a@acme.example"}
        del body[field]
        r = await client.post(base(ls.reseller_account.id), headers=auth(ls.reseller), json=body)
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]


class TestList:
    async def test_envelope_paging_and_links(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        rid = ls.reseller_account.id
        ids = [await add(session, rid, f"n{i}@acme.example") for i in range(5)]
        await add(session, ls.other_reseller_account.id, "other@other.example")
        r = await client.get(base(rid), headers=auth(ls.reseller), params={"limit": 2, "offset": 2})
        assert r.status_code == 200
        got = r.json()
        assert set(got) == {"count", "next", "previous", "results"}
        assert got["count"] == 5
        assert [x["id"] for x in got["results"]] == ids[2:4]
        assert all(set(x) == KEYS for x in got["results"])
        assert got["next"].startswith("http://testserver" + base(rid))
        assert "offset=4" in got["next"] and "limit=2" in got["next"]
        assert "offset" not in got["previous"]

    async def test_without_limit_every_setting(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        for i in range(3):
            await add(session, ls.reseller_account.id, f"n{i}@acme.example")
        got = (await client.get(base(ls.reseller_account.id), headers=auth(ls.reseller))).json()
        assert got["count"] == 3 and len(got["results"]) == 3
        assert got["next"] is None and got["previous"] is None  # null at the ends

    async def test_ordering_with_descending_and_id_tiebreak(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        rid = ls.reseller_account.id
        a = await add(session, rid, "b@acme.example", "failed_login")
        b = await add(session, rid, "a@acme.example", "failed_login", enabled=False)
        c = await add(session, rid, "c@acme.example", "deletion_request")
        d = await add(session, rid, "a@acme.example", "deletion_request")

        async def order(value: str, **params: object) -> list[int]:
            r = await client.get(
                base(rid), headers=auth(ls.reseller), params={"ordering": value, **params}
            )
            assert r.status_code == 200, r.text
            return [x["id"] for x in r.json()["results"]]

        assert await order("-id") == [d, c, b, a]
        assert await order("email") == [b, d, a, c]
        assert await order("-email") == [c, a, b, d]
        assert await order("notification_type,-email") == [c, d, a, b]
        assert await order("enabled") == [b, a, c, d]
        pages = [await order("email", limit=1, offset=i) for i in range(4)]
        assert [p[0] for p in pages] == [b, d, a, c]

    async def test_unknown_ordering_field_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.get(
            base(ls.reseller_account.id), headers=auth(ls.reseller), params={"ordering": "-created"}
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["ordering"]

    @pytest.mark.parametrize(
        ("param", "value"), [("limit", 0), ("limit", 1001), ("offset", -1), ("limit", "x")]
    )
    async def test_bounds_of_limit_and_offset(
        self, client: httpx.AsyncClient, ls: Landscape, param: str, value: object
    ):
        r = await client.get(
            base(ls.reseller_account.id), headers=auth(ls.reseller), params={param: value}
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [param]


class TestUpdateAndDelete:
    async def test_patch_is_partial(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "a@acme.example")
        r = await client.patch(
            f"{base(rid)}/{sid}", headers=auth(ls.reseller), json={"enabled": False}
        )
        assert r.status_code == 200, r.text
        assert r.json() == {
            "id": sid,
            "reseller": rid,
            "notification_type": "failed_login",
            "email": "a@acme.example",
            "enabled": False,
        }
        r = await client.patch(
            f"{base(rid)}/{sid}",
            headers=auth(ls.reseller),
            json={"email": "b@acme.example", "notification_type": "deletion_request"},
        )
        assert r.json()["enabled"] is False and r.json()["email"] == "b@acme.example"
        read = await client.get(f"{base(rid)}/{sid}", headers=auth(ls.reseller))
        assert read.json() == r.json()

    @pytest.mark.parametrize(
        "body",
        [
            {"email": None},
            {"email": "nope"},
            {"notification_type": "x"},
            {"notification_type": None},
            {"enabled": None},
        ],
    )
    async def test_patch_invalid_is_400(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        body: dict[str, object],
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "a@acme.example")
        r = await client.patch(f"{base(rid)}/{sid}", headers=auth(ls.reseller), json=body)
        assert r.status_code == 400
        assert list(r.json()["errors"]) == list(body)

    async def test_patch_explicit_null_is_refused_naming_the_field(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        # Left out, a field is kept; sent as null, it gets the error of a wrong type.
        rid = ls.reseller_account.id
        sid = await add(session, rid, "a@acme.example")
        r = await client.patch(
            f"{base(rid)}/{sid}",
            headers=auth(ls.reseller),
            json={"email": "b@acme.example", "enabled": None},
        )
        assert r.status_code == 400
        assert r.json()["errors"] == {"enabled": ["Input should be a valid boolean."]}
        read = await client.get(f"{base(rid)}/{sid}", headers=auth(ls.reseller))
        assert (read.json()["email"], read.json()["enabled"]) == ("a@acme.example", True)

    async def test_delete_is_204_then_404(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        rid = ls.reseller_account.id
        sid = await add(session, rid, "a@acme.example")
        r = await client.delete(f"{base(rid)}/{sid}", headers=auth(ls.reseller))
        assert r.status_code == 204 and r.content == b""
        again = await client.delete(f"{base(rid)}/{sid}", headers=auth(ls.reseller))
        assert again.status_code == 404
        assert await count(session, NotificationSetting) == 0

    async def test_a_setting_of_another_reseller_is_404_under_its_own_path(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        other = await add(session, ls.other_reseller_account.id, "o@other.example")
        r = await client.patch(
            f"{base(ls.reseller_account.id)}/{other}",
            headers=auth(ls.reseller),
            json={"enabled": False},
        )
        assert r.status_code == 404


class TestAccess:
    async def test_other_reseller_id_is_404_like_a_missing_one(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        other = ls.other_reseller_account.id
        sid = await add(session, other, "o@other.example")
        missing = await client.get(base(999999), headers=auth(ls.reseller))
        assert missing.status_code == 404
        calls = [
            client.get(base(other), headers=auth(ls.reseller)),
            client.post(
                base(other),
                headers=auth(ls.reseller),
                json={"notification_type": "failed_login", "email": "x@a.example"},
            ),
            client.patch(
                f"{base(other)}/{sid}", headers=auth(ls.reseller), json={"enabled": False}
            ),
            client.delete(f"{base(other)}/{sid}", headers=auth(ls.reseller)),
        ]
        for call in calls:
            r = await call
            assert r.status_code == 404
            assert r.json()["message"] == missing.json()["message"]
        assert await count(session, NotificationSetting) == 1

    async def test_operator_manages_any_reseller(self, client: httpx.AsyncClient, ls: Landscape):
        rid = ls.other_reseller_account.id
        r = await client.post(
            base(rid),
            headers=auth(ls.operator),
            json={"notification_type": "failed_login", "email": "x@a.example"},
        )
        assert r.status_code == 201
        assert r.json()["reseller"] == rid
        listed = await client.get(base(rid), headers=auth(ls.operator))
        assert listed.json()["count"] == 1

    async def test_operator_with_an_account_that_is_not_a_reseller_is_404(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.get(base(ls.client_account.id), headers=auth(ls.operator))
        assert r.status_code == 404

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_client_callers_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        r = await client.get(base(ls.reseller_account.id), headers=auth(getattr(ls, who)))
        assert r.status_code == 403

    async def test_without_a_key_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(base(ls.reseller_account.id))).status_code == 401


class TestUserActions:
    async def test_create_update_delete_record_one_event_each(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        rid = ls.reseller_account.id
        r = await client.post(
            base(rid),
            headers=auth(ls.reseller),
            json={"notification_type": "failed_login", "email": "a@a.example"},
        )
        sid = r.json()["id"]
        await client.patch(
            f"{base(rid)}/{sid}", headers=auth(ls.reseller), json={"enabled": True}
        )  # no change: no event
        await client.patch(f"{base(rid)}/{sid}", headers=auth(ls.reseller), json={"enabled": False})
        await client.delete(f"{base(rid)}/{sid}", headers=auth(ls.reseller))
        found = await events(session)
        assert [e["action_type"] for e in found] == ["create", "update", "delete"]
        assert all(e["api_group"] == "notification_settings" for e in found)
        assert all(e["client_id"] == rid for e in found)
        assert all(
            e["resources"] == [{"resource_id": str(sid), "resource_type": "notification_setting"}]
            for e in found
        )
        assert found[1]["action_data"] == {"enabled": False}
