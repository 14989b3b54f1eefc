"""run_load: the `cloudadmin load FILE|-` command."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import Addendum, Client
from cloudadmin.importer import run_load
from cloudadmin.importer.command import run_on_fast_loop
from tests.importer.documents import addendum, example


async def run(settings: Settings, source: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    # run_load owns its event loop, like the CLI; keep it off the test's loop.
    code = await asyncio.to_thread(run_load, settings, source, out, err)
    return code, out.getvalue(), err.getvalue()


async def clients(session: AsyncSession) -> int:
    return (await session.execute(select(func.count()).select_from(Client))).scalar_one()


class TestRunLoad:
    async def test_a_valid_file_is_committed(
        self, settings: Settings, session: AsyncSession, tmp_path: Path
    ) -> None:
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(example()))
        code, out, err = await run(settings, str(path))
        assert (code, err) == (0, "")
        assert out.startswith("loaded 10 records")
        assert await clients(session) == 2

    async def test_a_file_with_addendums_is_loaded_row_by_row(
        self, settings: Settings, session: AsyncSession, tmp_path: Path
    ) -> None:
        """The file's addendums are parsed into structs (importer/fast_json.py); a load
        that upserts them (below the bulk threshold, and always on SQLite) turns them
        into the dicts the models read, and stores them all, nulls and absent keys
        alike."""
        doc = example()
        doc["addendums"] = [
            addendum(1),
            addendum(2, client={"id": 2001, "company_name": "Shop Ltd"}, payer_id=None),
            addendum(3, reseller_id=1000, status_at_active_at="x"),
        ]
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(doc))
        code, out, err = await run(settings, str(path))
        assert (code, err) == (0, "")
        assert "addendums 3" in out
        stored = (
            await session.execute(select(Addendum.id, Addendum.reseller_id).order_by(Addendum.id))
        ).all()
        assert [tuple(row) for row in stored] == [(1, None), (2, None), (3, 1000)]

    async def test_standard_input_is_read_for_a_dash(
        self, settings: Settings, session: AsyncSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(example())))
        code, _out, _err = await run(settings, "-")
        assert code == 0
        assert await clients(session) == 2

    async def test_an_invalid_document_exits_1_with_pointers_and_writes_nothing(
        self, settings: Settings, session: AsyncSession, tmp_path: Path
    ) -> None:
        doc = example()
        doc["clients"][1]["email"] = "nope"
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(doc))
        code, out, err = await run(settings, str(path))
        assert (code, out) == (1, "")
        assert err == "error: /clients/1/email: not a valid e-mail address\n"
        assert await clients(session) == 0

    async def test_invalid_json_exits_1(
        self, settings: Settings, session: AsyncSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO('{"clients": ['))
        code, out, err = await run(settings, "-")
        assert (code, out) == (1, "")
        assert err.startswith("error: not valid JSON")

    async def test_a_missing_file_exits_1(
        self, settings: Settings, session: AsyncSession, tmp_path: Path
    ) -> None:
        code, _out, err = await run(settings, str(tmp_path / "absent.json"))
        assert code == 1
        assert err.startswith("error: cannot read")


class TestTheLoadsLoop:
    def test_the_load_runs_on_uvloop(self) -> None:
        """The COPY's writes cost the loader less on uvloop (importer/command.py)."""

        async def running_loop() -> str:
            return type(asyncio.get_running_loop()).__module__

        assert run_on_fast_loop(running_loop()).startswith("uvloop")
