"""A large document read in parts (importer/document_parts.py): what it gives is what
the whole document parses to, whatever the layout and the text inside the records;
what it cannot read in parts it leaves to the whole reading; and a load that reads
in parts stores what a load of the parsed document stores."""

from __future__ import annotations

import asyncio
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.importer import document_parts, run_load
from cloudadmin.importer.addendum_copy import AddendumJson
from cloudadmin.importer.document_parts import StreamedRecords, Unstreamable
from cloudadmin.kit.crypto import SecretBox
from tests.importer.test_bulk_counts import counters_match_rows, document
from tests.importer.test_bulk_load import copied, state, upserted_state

__all__ = ["copied"]  # the fixture, shared with the bulk load's tests


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of a few records, and small windows, so that small files take every path."""
    monkeypatch.setattr(document_parts, "PART_BYTES", 2_000)
    monkeypatch.setattr(document_parts, "_WINDOW", 64)


def read(path: Path, at_least: int = 10) -> Any:
    """What the reader gives, as one parsed document (None: read whole)."""
    document = document_parts.read(path, at_least)
    if document is None:
        return None
    records = document.get("addendums")
    if isinstance(records, StreamedRecords):
        document["addendums"] = [r for _start, chunk in records.chunks(7) for r in chunk]
        document.update(records.after)
    return msgspec.to_builtins(document, builtin_types=(Decimal,))


def parsed(text: str) -> Any:
    return json.loads(text, parse_float=Decimal)


def written(tmp_path: Path, doc: Any, **dump: Any) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, **dump))
    return path


def reordered(doc: dict[str, Any], first: str) -> dict[str, Any]:
    return {first: doc[first], **{k: v for k, v in doc.items() if k != first}}


class TestReadingInParts:
    @pytest.mark.parametrize("layout", [{}, {"indent": 2}, {"separators": (",", ":")}])
    @pytest.mark.parametrize("first", ["clients", "addendums"])
    def test_gives_what_the_whole_document_parses_to(
        self, tmp_path: Path, layout: dict[str, Any], first: str
    ) -> None:
        """Addendums first (the keys after them come at their end) or last, in any
        spacing."""
        doc = reordered(document(1, 100), first)
        path = written(tmp_path, doc, **layout)
        assert read(path) == parsed(path.read_text())

    def test_parts_are_structs_where_plain_and_dicts_where_not(self, tmp_path: Path) -> None:
        doc = document(1, 100)
        doc["addendums"][50]["status"] = "lost"  # the models will say what is wrong
        given = document_parts.read(written(tmp_path, doc), 10)
        assert given is not None
        records = given["addendums"]
        assert isinstance(records, StreamedRecords)
        chunks = [chunk for _start, chunk in records.chunks(1_000)]
        kinds = {type(record) for chunk in chunks for record in chunk}
        assert kinds == {AddendumJson, dict}
        assert records.count == 100

    def test_fewer_records_than_asked_give_the_plain_document(self, tmp_path: Path) -> None:
        path = written(tmp_path, document(1, 100))
        given = document_parts.read(path, 1_000)
        assert given is not None and isinstance(given["addendums"], list)
        assert msgspec.to_builtins(given, builtin_types=(Decimal,)) == parsed(path.read_text())

    def test_a_document_read_whole_after_all_holds_one_kind_of_record(self, tmp_path: Path) -> None:
        """Fewer addendums than a bulk load needs: the parts become one list, all
        dicts as soon as one part was not plainly shaped (the models read dicts)."""
        doc = document(1, 100)
        doc["addendums"][60]["status"] = "lost"
        path = written(tmp_path, doc)
        given = document_parts.read(path, 1_000)
        assert given is not None
        assert {type(record) for record in given["addendums"]} == {dict}
        assert given == parsed(path.read_text())

    def test_a_cut_inside_a_string_is_passed_over(self, tmp_path: Path) -> None:
        doc = reordered(document(1, 100), "addendums")
        for i in range(0, 100, 9):
            doc["addendums"][i]["plan"]["name"] = 'x"},{"id": 1},{"a\\' + "},{ " * 3
        path = written(tmp_path, doc)
        assert read(path) == parsed(path.read_text())

    def test_too_many_cuts_inside_strings_leave_the_document_to_the_whole_reading(
        self, tmp_path: Path
    ) -> None:
        doc = document(1, 100)
        doc["addendums"][40]["plan"]["name"] = "},{" * 300
        given = document_parts.read(written(tmp_path, doc), 10)
        assert given is not None
        with pytest.raises(Unstreamable):
            list(given["addendums"].chunks(100))

    @pytest.mark.parametrize(
        "text",
        [
            '{"addendums": [{"a": 1}, {"b": 2},], "regions": []}',  # a trailing comma
            '{"addendums": [{"a": 1}], "regions": [],}',
            '{"addendums": [{"a": 1}]} x',
            '{"addendums": [{"a": 1}], "addendums": []}',  # json.loads keeps the last
            '{"regions": [], "regions": null, "addendums": [{"a": 1}]}',
            '{"addend\\u0075ms": [{"a": 1}]}',  # a key with an escape
            '["addendums"]',
            '{"addendums": [{"a": NaN}]}',
            '\ufeff{"addendums": []}',
            "",
            "   ",
        ],
    )
    def test_what_it_cannot_read_it_leaves_to_the_whole_reading(
        self, tmp_path: Path, text: str
    ) -> None:
        path = written(tmp_path, text)
        given = document_parts.read(path, 1)
        if given is not None:  # found out while the parts are read
            with pytest.raises(Unstreamable):
                list(given["addendums"].chunks(100))

    @pytest.mark.parametrize(
        "text",
        [
            "{}",
            " { } ",
            '{"addendums": []}',
            '{"addendums": null, "regions": [{"id": 1, "name": "a"}]}',
            '{"addendums": [1, 2, [3]], "regions": []}',
            '{"addendums": [{"b": [{"c": 2}]}, {"d": 3.25}], "x": {"y": "}]"}}',
        ],
    )
    def test_odd_but_valid_documents_read_as_parsed(self, tmp_path: Path, text: str) -> None:
        path = written(tmp_path, text)
        assert read(path, 1) == parsed(text)

    @examples(max_examples=60, deadline=None)
    @given(
        names=st.lists(st.text(alphabet='},{[]" \\\nab', max_size=12), min_size=1, max_size=30),
        part=st.integers(min_value=1, max_value=3_000),
    )
    def test_any_text_in_the_records_reads_as_parsed(
        self, tmp_path_factory: pytest.TempPathFactory, names: list[str], part: int
    ) -> None:
        document_parts.PART_BYTES = part  # the fixture puts it back
        doc = reordered(document(1, 30), "addendums")
        for i, name in enumerate(names):
            doc["addendums"][i]["plan"]["name"] = name
        path = written(tmp_path_factory.mktemp("doc"), doc)
        try:
            got = read(path, 1)
        except Unstreamable:
            return  # left to the whole reading, which is always right
        assert got is None or got == parsed(path.read_text())


def command_document(count: int) -> dict[str, Any]:
    # Addendums first: the clients they refer to come after them in the file.
    return reordered(document(1, count), "addendums")


async def load_file(settings: Settings, path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(run_load, settings, str(path), out, err)
    return code, out.getvalue(), err.getvalue()


class TestLoadingInParts:
    @pytest.fixture(autouse=True)
    def in_parts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(document_parts, "STREAM_BYTES", 0)  # every file

    async def test_stores_what_the_upserts_store(
        self,
        settings: Settings,
        session: AsyncSession,
        box: SecretBox,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        doc = command_document(300)
        upserted = await upserted_state(session, doc, box, monkeypatch)
        code, out, err = await load_file(settings, written(tmp_path, doc))
        assert (code, err) == (0, "")
        assert "addendums 300" in out and "clients 2" in out
        assert sum(copied) == 300
        assert await state(session) == upserted
        await counters_match_rows(session)

    async def test_into_a_table_that_holds_addendums_it_upserts(
        self,
        settings: Settings,
        session: AsyncSession,
        copied: list[int],
        tmp_path: Path,
    ) -> None:
        """The second load of the same file finds the table full: no COPY, the parts
        read into one list and upserted, the rows and counters as they were."""
        doc = command_document(300)
        doc["addendums"][150]["status"] = "paused"  # a part given as plain values
        doc["addendums"][150]["plan"]["name"] = {"not": "a text"}
        path = written(tmp_path, doc)
        assert (await load_file(settings, path))[0] == 1
        doc["addendums"][150]["plan"]["name"] = "Fixed"
        path = written(tmp_path, doc)
        assert (await load_file(settings, path))[:3:2] == (0, "")
        async with session.begin():
            first = await state(session)
        code, out, err = await load_file(settings, path)
        assert (code, err) == (0, "")
        assert "addendums 300" in out
        # The first stopped at the problem and was taken back, the second COPYed all,
        # the third none.
        assert len(copied) == 2 and copied[0] < 300 and copied[1] == 300
        async with session.begin():
            assert await state(session) == first
        await counters_match_rows(session)

    async def test_problems_read_as_in_a_whole_load(
        self,
        settings: Settings,
        session: AsyncSession,
        copied: list[int],
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        doc = command_document(300)
        doc["addendums"][120]["status"] = "lost"
        doc["addendums"][250]["client_id"] = 4242
        doc["clients"][0]["email"] = "not an address"
        path = written(tmp_path, doc)
        code, _out, in_parts = await load_file(settings, path)
        monkeypatch.setattr(document_parts, "STREAM_BYTES", 1 << 40)
        whole_code, _out, whole = await load_file(settings, path)
        assert code == whole_code == 1
        assert sorted(in_parts.splitlines()) == sorted(whole.splitlines())
        assert "/addendums/120/status" in in_parts and "/clients/0/email" in in_parts
        async with session.begin():
            assert (await session.execute(text("SELECT count(*) FROM addendums"))).scalar() == 0

    async def test_a_document_it_cannot_finish_in_parts_loads_whole(
        self,
        settings: Settings,
        session: AsyncSession,
        copied: list[int],
        tmp_path: Path,
    ) -> None:
        """The COPY began, the part it could not read rolled it back, and the whole
        reading loads the document."""
        doc = command_document(300)
        for i in range(200, 210):  # wherever a part's cuts are looked for near them
            doc["addendums"][i]["plan"]["name"] = "},{" * 80
        code, out, err = await load_file(settings, written(tmp_path, doc))
        assert (code, err) == (0, "")
        assert "addendums 300" in out
        assert copied[0] < 300 and copied[-1] == 300
        async with session.begin():
            assert (await session.execute(text("SELECT count(*) FROM addendums"))).scalar() == 300
            names = (
                await session.execute(text("SELECT plan_name FROM addendums WHERE id = 201"))
            ).scalar()
        assert names == "},{" * 80
        await counters_match_rows(session)
