"""Branding settings: operations 7 (read), 8 (upload) and the PUT."""

from __future__ import annotations

import io

import httpx
import pytest
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import Branding
from cloudadmin.kit.crypto import SecretBox
from tests.factories import Landscape, auth, landscape, make_client, make_key, make_user
from tests.iam.accounts_helpers import events

SETTINGS = "/iam/reselling/settings"
UPLOAD = "/iam/reselling/settings/upload"
MASK = "********"


@pytest.fixture
async def ls(session: AsyncSession) -> Landscape:
    return await landscape(session)


def raster(fmt: str, size: tuple[int, int] = (32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGBA" if fmt != "JPEG" else "RGB", size, (200, 30, 30)).save(buf, format=fmt)
    return buf.getvalue()


CLEAN_SVG = (
    b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" '
    b'height="10"><rect width="10" height="10" fill="#c00"/></svg>'
)
SCRIPTED_SVGS = {
    "script element": b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    "event handler": b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
    "javascript link": (
        b'<svg xmlns="http://www.w3.org/2000/svg" '
        b'xmlns:xlink="http://www.w3.org/1999/xlink"><a xlink:href=" javascript:'
        b'alert(1)"><rect width="5" height="5"/></a></svg>'
    ),
    "foreign object": (
        b'<svg xmlns="http://www.w3.org/2000/svg"><foreignObject>'
        b'<body xmlns="http://www.w3.org/1999/xhtml">x</body></foreignObject>'
        b"</svg>"
    ),
    "entities": (
        b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]>'
        b'<svg xmlns="http://www.w3.org/2000/svg">&a;</svg>'
    ),
}


def full_body(**mail: object) -> dict[str, object]:
    mail_server: dict[str, object] = {
        "tls": True,
        "host": "smtp.acme.example",
        "port": "587",
        "login": "mailer",
        "password": "smtp-Secret-1",
    }
    mail_server.update(mail)
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
        "privateSettings": {"mailServer": mail_server},
    }


async def stored(session: AsyncSession, reseller_id: int) -> Branding | None:
    from sqlalchemy import select

    row = (
        await session.execute(
            select(Branding)
            .where(Branding.reseller_id == reseller_id)
            .execution_options(populate_existing=True)
        )
    ).scalar_one_or_none()
    await session.commit()
    return row


class TestGetSettings:
    async def test_defaults_with_every_required_field(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.get(SETTINGS, headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        got = r.json()
        assert set(got) == {"domain", "publicSettings", "privateSettings", "reseller", "deleted"}
        assert got["reseller"] == ls.reseller_account.id and got["deleted"] is False
        public = got["publicSettings"]
        assert public["showApiDoc"] is True and public["showStatusPage"] == "true"
        assert public["showKnowledgeBase"] is True and public["showTickets"] is True
        # Unset optional strings are left out (the provider types them as strings, not null).
        assert set(public) == {
            "showApiDoc",
            "showStatusPage",
            "showKnowledgeBase",
            "showTickets",
            "colors",
        }
        assert public["colors"] == {}
        assert got["privateSettings"]["mailServer"] == {"tls": False}

    async def test_operator_reads_its_own_reseller_account(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.get(SETTINGS, headers=auth(ls.operator))
        assert r.status_code == 200
        assert r.json()["reseller"] not in (ls.reseller_account.id, ls.other_reseller_account.id)

    async def test_operator_outside_a_reseller_account_is_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        home = await make_client(session)
        token = await make_key(session, await make_user(session, home, superuser=True))
        await session.commit()
        r = await client.get(SETTINGS, headers=auth(token))
        assert r.status_code == 403

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_client_callers_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        r = await client.get(SETTINGS, headers=auth(getattr(ls, who)))
        assert r.status_code == 403

    async def test_without_a_key_is_401(self, client: httpx.AsyncClient, ls: Landscape):
        assert (await client.get(SETTINGS)).status_code == 401


class TestReplaceSettings:
    async def test_round_trip_with_the_password_encrypted_and_masked(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        settings: Settings,
    ):
        r = await client.put(SETTINGS, json=full_body(), headers=auth(ls.reseller))
        assert r.status_code == 200, r.text
        assert "smtp-Secret-1" not in r.text
        got = (await client.get(SETTINGS, headers=auth(ls.reseller))).json()
        assert got == r.json()
        assert got["domain"] == "acme.example"
        assert got["publicSettings"]["brandName"] == "Acme Cloud"
        assert got["publicSettings"]["showStatusPage"] == "false"
        assert got["publicSettings"]["colors"]["headerText"] == "#ffffff"
        assert got["privateSettings"]["mailServer"] == {
            "tls": True,
            "host": "smtp.acme.example",
            "port": "587",
            "login": "mailer",
            "password": MASK,
        }
        row = await stored(session, ls.reseller_account.id)
        assert "smtp-Secret-1" not in str(row.mail_server)
        assert "smtp-Secret-1" not in row.mail_password_encrypted
        box = SecretBox(settings.resolved_secret_key())
        assert box.decrypt(row.mail_password_encrypted) == "smtp-Secret-1"

    async def test_the_mask_keeps_the_password_and_null_removes_it(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.put(SETTINGS, json=full_body(), headers=auth(ls.reseller))
        before = (await stored(session, ls.reseller_account.id)).mail_password_encrypted
        r = await client.put(
            SETTINGS,
            json=full_body(password=MASK, host="smtp2.acme.example"),
            headers=auth(ls.reseller),
        )
        assert r.json()["privateSettings"]["mailServer"]["password"] == MASK
        assert (await stored(session, ls.reseller_account.id)).mail_password_encrypted == before
        r = await client.put(SETTINGS, json=full_body(password=None), headers=auth(ls.reseller))
        assert "password" not in r.json()["privateSettings"]["mailServer"]
        assert (await stored(session, ls.reseller_account.id)).mail_password_encrypted is None

    async def test_status_page_flag_given_as_a_boolean(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        body = full_body()
        body["publicSettings"]["showStatusPage"] = True  # type: ignore[index]
        r = await client.put(SETTINGS, json=body, headers=auth(ls.reseller))
        assert r.json()["publicSettings"]["showStatusPage"] == "true"

    @pytest.mark.parametrize(
        ("path", "value", "field"),
        [
            (("publicSettings", "fromEmail"), "nope", "publicSettings.fromEmail"),
            (("publicSettings", "showApiDoc"), "perhaps", "publicSettings.showApiDoc"),
            (("publicSettings", "websiteLink"), "ftp://x", "publicSettings.websiteLink"),
            (("privateSettings", "mailServer", "port"), "70000", "privateSettings.mailServer.port"),
            (("privateSettings", "mailServer", "port"), "smtp", "privateSettings.mailServer.port"),
            (("domain",), "not a domain!", "domain"),
        ],
    )
    async def test_invalid_value_is_400_naming_it(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        path: tuple[str, ...],
        value: object,
        field: str,
    ):
        body = full_body()
        target = body
        for key in path[:-1]:
            target = target[key]  # type: ignore[assignment]
        target[path[-1]] = value
        r = await client.put(SETTINGS, json=body, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == [field]

    async def test_required_public_flags(self, client: httpx.AsyncClient, ls: Landscape):
        body = full_body()
        del body["publicSettings"]["showTickets"]  # type: ignore[attr-defined]
        r = await client.put(SETTINGS, json=body, headers=auth(ls.reseller))
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["publicSettings.showTickets"]

    async def test_each_reseller_has_its_own(self, client: httpx.AsyncClient, ls: Landscape):
        await client.put(SETTINGS, json=full_body(), headers=auth(ls.reseller))
        other = (await client.get(SETTINGS, headers=auth(ls.other_reseller))).json()
        assert other["reseller"] == ls.other_reseller_account.id
        assert other["domain"] == "" and "brandName" not in other["publicSettings"]

    async def test_client_administrator_is_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.put(SETTINGS, json=full_body(), headers=auth(ls.client_admin))
        assert r.status_code == 403

    async def test_records_one_event_with_the_password_redacted(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.put(SETTINGS, json=full_body(), headers=auth(ls.reseller))
        found = await events(session)
        assert len(found) == 1
        assert found[0]["api_group"] == "branding" and found[0]["action_type"] == "update"
        assert found[0]["client_id"] == ls.reseller_account.id
        assert found[0]["action_data"]["privateSettings"]["mailServer"]["password"] == "***"
        assert "smtp-Secret-1" not in str(found[0])


class TestUpload:
    async def test_logo_and_favicon_together_are_stored_and_served(
        self, client: httpx.AsyncClient, ls: Landscape, settings: Settings
    ):
        logo, favicon = raster("PNG"), raster("ICO", (16, 16))
        r = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={
                "logo": ("logo.png", logo, "image/png"),
                "favicon": ("favicon.ico", favicon, "image/x-icon"),
            },
        )
        assert r.status_code == 200, r.text
        public = r.json()["publicSettings"]
        assert public["logo"].startswith("http://testserver/iam/reselling/files/")
        assert public["logo"].endswith(".png") and public["favicon"].endswith(".ico")
        served = await client.get(public["logo"])
        assert served.status_code == 200
        assert served.content == logo
        assert served.headers["content-type"] == "image/png"
        assert served.headers["x-content-type-options"] == "nosniff"
        icon = await client.get(public["favicon"])
        assert icon.content == favicon and icon.headers["content-type"] == "image/x-icon"
        name = public["logo"].rsplit("/", 1)[1]
        assert (settings.data_dir / "blobs" / "branding" / name).read_bytes() == logo
        again = await client.get(SETTINGS, headers=auth(ls.reseller))
        assert again.json()["publicSettings"]["logo"] == public["logo"]

    async def test_parts_are_uploaded_separately_and_keep_each_other(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        first = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={"logo": ("l.jpg", raster("JPEG"), "image/jpeg")},
        )
        assert first.status_code == 200, first.text
        assert first.json()["publicSettings"]["logo"].endswith(".jpg")
        second = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={"favicon": ("f.png", raster("PNG"), "image/png")},
        )
        assert second.status_code == 200
        public = second.json()["publicSettings"]
        assert public["logo"] == first.json()["publicSettings"]["logo"]
        assert public["favicon"].endswith(".png")

    async def test_clean_svg_logo_is_served_sandboxed(
        self, client: httpx.AsyncClient, ls: Landscape
    ):
        r = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={"logo": ("logo.svg", CLEAN_SVG, "image/svg+xml")},
        )
        assert r.status_code == 200, r.text
        served = await client.get(r.json()["publicSettings"]["logo"])
        assert served.content == CLEAN_SVG
        assert served.headers["content-type"].startswith("image/svg+xml")
        assert "sandbox" in served.headers["content-security-policy"]

    @pytest.mark.parametrize("kind", sorted(SCRIPTED_SVGS))
    async def test_svg_with_scripts_is_refused(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession, kind: str
    ):
        r = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={"logo": ("logo.svg", SCRIPTED_SVGS[kind], "image/svg+xml")},
        )
        assert r.status_code == 400
        assert list(r.json()["errors"]) == ["logo"]
        assert await stored(session, ls.reseller_account.id) is None

    @pytest.mark.parametrize(
        ("part", "filename", "content"),
        [
            ("logo", "logo.png", b"this is plain text, renamed"),
            ("logo", "logo.png", raster("PNG")[:60]),
            ("logo", "logo.ico", raster("ICO", (16, 16))),
            ("logo", "logo.png", b""),
            ("favicon", "favicon.ico", b"MZ\x90\x00 not an icon"),
            ("favicon", "favicon.ico", raster("JPEG")),
            ("favicon", "favicon.png", CLEAN_SVG),
        ],
    )
    async def test_content_that_is_not_an_accepted_image_is_400(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        part: str,
        filename: str,
        content: bytes,
    ):
        r = await client.post(
            UPLOAD, headers=auth(ls.reseller), files={part: (filename, content, "image/png")}
        )
        assert r.status_code == 400, r.text
        assert r.json()["exception_class"] == "ValidationError"
        assert list(r.json()["errors"]) == [part]
        assert await stored(session, ls.reseller_account.id) is None

    @pytest.mark.parametrize(
        ("part", "size"), [("logo", 4 * 1024 * 1024), ("favicon", 1024 * 1024)]
    )
    async def test_oversized_file_is_413(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        part: str,
        size: int,
    ):
        content = raster("PNG") + b"\x00" * size
        r = await client.post(
            UPLOAD, headers=auth(ls.reseller), files={part: ("big.png", content, "image/png")}
        )
        assert r.status_code == 413
        assert r.json()["exception_class"] == "PayloadTooLarge"
        assert await stored(session, ls.reseller_account.id) is None

    async def test_a_bad_part_stores_nothing_of_the_good_one(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
        session: AsyncSession,
        settings: Settings,
    ):
        r = await client.post(
            UPLOAD,
            headers=auth(ls.reseller),
            files={
                "logo": ("logo.png", raster("PNG"), "image/png"),
                "favicon": ("favicon.ico", b"nope", "image/x-icon"),
            },
        )
        assert r.status_code == 400
        assert await stored(session, ls.reseller_account.id) is None
        assert not (settings.data_dir / "blobs" / "branding").exists()

    async def test_no_part_is_400(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(UPLOAD, headers=auth(ls.reseller), files={"other": ("x", b"x")})
        assert r.status_code == 400
        assert set(r.json()["errors"]) == {"logo", "favicon"}

    async def test_json_instead_of_multipart_is_415(self, client: httpx.AsyncClient, ls: Landscape):
        r = await client.post(UPLOAD, headers=auth(ls.reseller), json={"logo": "x"})
        assert r.status_code == 415

    @pytest.mark.parametrize("who", ["client_admin", "client_member"])
    async def test_client_callers_are_forbidden(
        self, client: httpx.AsyncClient, ls: Landscape, who: str
    ):
        r = await client.post(
            UPLOAD,
            headers=auth(getattr(ls, who)),
            files={"logo": ("l.png", raster("PNG"), "image/png")},
        )
        assert r.status_code == 403

    async def test_records_one_event(
        self, client: httpx.AsyncClient, ls: Landscape, session: AsyncSession
    ):
        await client.post(
            UPLOAD, headers=auth(ls.reseller), files={"logo": ("l.png", raster("PNG"), "image/png")}
        )
        found = await events(session)
        assert [(e["action_type"], e["api_group"]) for e in found] == [("upload", "branding")]
        assert found[0]["action_data"]["logo"]["content_type"] == "image/png"
        assert found[0]["resources"] == [
            {"resource_id": str(ls.reseller_account.id), "resource_type": "branding"}
        ]


class TestServedFiles:
    @pytest.mark.parametrize("name", ["0" * 64 + ".png", "..%2Fsecret.key", "x.png"])
    async def test_unknown_names_are_404(self, client: httpx.AsyncClient, name: str):
        r = await client.get(f"/iam/reselling/files/{name}")
        assert r.status_code == 404
