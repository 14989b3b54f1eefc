"""An export streams: ten times the addendums need about the same memory.

Measured with chunks of CHUNK rows rather than the export's own 2,000, so that ten
times a few chunks is a few thousand rows to load and trace, not 20,000 (tracemalloc
slows an export several times)."""

from __future__ import annotations

import pytest

from cloudadmin.config import Settings
from cloudadmin.exporter import document
from cloudadmin.importer import load_into
from tests.exporter.memory import export_peak
from tests.importer.documents import addendum, example

CHUNK = 100
SMALL = 3 * CHUNK
LARGE = 10 * SMALL


async def load_addendums(settings: Settings, first: int, n: int) -> None:
    doc = example() if first == 1 else {}
    doc["addendums"] = [addendum(i) for i in range(first, first + n)]
    await load_into(settings, doc)


class TestStreaming:
    async def test_ten_times_the_rows_do_not_need_ten_times_the_memory(
        self, settings: Settings, app: object, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(document, "CHUNK", CHUNK)
        await load_addendums(settings, 1, SMALL)
        await export_peak(settings)  # warm up: compiled statements, imports
        small, small_chars = await export_peak(settings)
        await load_addendums(settings, SMALL + 1, LARGE - SMALL)
        large, large_chars = await export_peak(settings)
        assert large_chars > 9 * small_chars
        # A whole table in memory would be ~10x; a chunk at a time stays about level.
        assert large < 2 * small, f"peak {small:,} B for {SMALL}, {large:,} B for {LARGE}"
