"""Company names are unique among live accounts ignoring letter case, the same way at
the importer and the API and on both databases (the stored folded copy)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, User
from cloudadmin.importer import LoadError, load_document
from cloudadmin.kit.crypto import SecretBox
from tests.factories import auth
from tests.facts.doors import OPERATOR, RESELLER, base_landscape, importer_accepts

# (a stored account's name, whether it is deleted, the name another account wants,
# whether that is refused)
CASES = [
    ("Dup Co", False, "dup co", True),
    ("MÜLLER AG", False, "müller ag", True),
    ("Straße GmbH", False, "STRASSE GMBH", True),
    ("Ǆemal", False, "ǆemal", True),
    ("Dup Co", True, "dup co", False),
    ("Dup Co", False, "Dup Co Ltd", False),
    ("Muller AG", False, "Müller AG", False),
]


def account(ident: int, company: str, deleted: bool = False) -> dict[str, Any]:
    return {
        "id": ident,
        "email": f"c{ident}@example.com",
        "companyName": company,
        "client_type": "common",
        "resellers": 1000,
        "deleted": deleted,
    }


class TestBothDoors:
    @pytest.mark.parametrize(("stored", "deleted", "wanted", "refused"), CASES)
    async def test_same_outcome(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        box: SecretBox,
        stored: str,
        deleted: bool,
        wanted: str,
        refused: bool,
    ) -> None:
        await base_landscape(session, box)
        await load_document(session, {"clients": [account(3001, stored, deleted)]}, box)
        await session.commit()

        imported = await importer_accepts(session, box, {"clients": [account(3002, wanted)]})
        renamed = await client.patch(
            "/iam/clients/2001", json={"companyName": wanted}, headers=auth(OPERATOR)
        )
        assert renamed.status_code in (200, 400), renamed.text
        await client.patch(
            "/iam/clients/2001", json={"companyName": "Shop Ltd"}, headers=auth(OPERATOR)
        )
        created = await client.post(
            "/iam/users",
            headers=auth(RESELLER),
            json={
                "email": "new@example.com",
                "password": "Vq8#zL2!mW9$",
                "company": wanted,
            },
        )
        assert created.status_code in (201, 400), created.text
        outcomes = (not imported, renamed.status_code == 400, created.status_code == 400)
        assert outcomes == (refused, refused, refused), (renamed.text, created.text)

    @pytest.mark.parametrize(
        ("first", "second"), [("Dup Co", "dup co"), ("MÜLLER AG", "müller ag")]
    )
    async def test_one_document_cannot_hold_both(
        self, session: AsyncSession, box: SecretBox, first: str, second: str
    ) -> None:
        await base_landscape(session, box)
        doc = {"clients": [account(3001, first), account(3002, second)]}
        with pytest.raises(LoadError) as caught:
            await load_document(session, doc, box)
        assert [p.pointer for p in caught.value.problems] == ["/clients/1/companyName"]

    async def test_a_deleted_account_in_the_document_does_not_count(
        self, session: AsyncSession, box: SecretBox
    ) -> None:
        await base_landscape(session, box)
        doc = {"clients": [account(3001, "Dup Co", deleted=True), account(3002, "dup co")]}
        await load_document(session, doc, box)


class TestFoldedCopy:
    async def test_follows_the_name_through_every_door(
        self, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox
    ) -> None:
        await base_landscape(session, box)
        r = await client.patch(
            "/iam/clients/2001", json={"companyName": "STRAẞE AG"}, headers=auth(OPERATOR)
        )
        assert r.status_code == 200, r.text
        folded = dict(
            (
                await session.execute(
                    select(Client.id, Client.company_name_folded).order_by(Client.id)
                )
            ).all()
        )
        await session.commit()
        assert folded == {1000: "acme hosting", 2001: "strasse ag"}


class TestRenameReachesUsers:
    async def test_embedded_users_show_the_new_company(
        self, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox
    ) -> None:
        await base_landscape(session, box)
        r = await client.patch(
            "/iam/clients/2001", json={"companyName": "Shop GmbH"}, headers=auth(OPERATOR)
        )
        assert r.status_code == 200, r.text
        assert [u["company"] for u in r.json()["users"]] == ["Shop GmbH"]
        got = await client.get("/iam/clients/2001", headers=auth(OPERATOR))
        assert [u["company"] for u in got.json()["users"]] == ["Shop GmbH"]
        stored = (
            (await session.execute(select(User.company).where(User.client_id == 2001)))
            .scalars()
            .all()
        )
        await session.commit()
        assert stored == ["Shop GmbH"]

    async def test_a_refused_rename_leaves_users_alone(
        self, client: httpx.AsyncClient, session: AsyncSession, box: SecretBox
    ) -> None:
        await base_landscape(session, box)
        r = await client.patch(
            "/iam/clients/2001", json={"companyName": "ACME HOSTING"}, headers=auth(OPERATOR)
        )
        assert r.status_code == 400, r.text
        got = await client.get("/iam/clients/2001", headers=auth(OPERATOR))
        assert [u["company"] for u in got.json()["users"]] == ["Shop Ltd"]
