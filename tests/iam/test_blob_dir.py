"""CLOUDADMIN_BLOB_DIR puts uploaded branding files where the operator says."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.web.app_state import app_state
from tests.factories import auth, landscape
from tests.iam.test_branding import UPLOAD, raster


class TestBlobDir:
    async def test_upload_lands_in_the_configured_directory(
        self, settings: Settings, session: AsyncSession, tmp_path: Path, app: object
    ):
        ls = await landscape(session)
        shared = tmp_path / "shared-blobs"
        configured = create_app(settings.model_copy(update={"blob_dir": shared}))
        transport = httpx.ASGITransport(app=configured)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            logo = raster("PNG")
            r = await c.post(
                UPLOAD, headers=auth(ls.reseller), files={"logo": ("l.png", logo, "image/png")}
            )
        await app_state(configured).engine.dispose()
        assert r.status_code == 200, r.text
        name = r.json()["publicSettings"]["logo"].rsplit("/", 1)[1]
        assert (shared / "branding" / name).read_bytes() == logo
        assert not (settings.data_dir / "blobs").exists()
