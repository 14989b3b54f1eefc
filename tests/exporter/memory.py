"""Peak memory of an export, measured with tracemalloc (shared by the test and the bench)."""

from __future__ import annotations

import tracemalloc

from cloudadmin.config import Settings
from cloudadmin.exporter.command import export_to


class Discard:
    """A text stream that only counts what it is given."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return len(text)


async def export_peak(settings: Settings) -> tuple[int, int]:
    """(peak bytes allocated during the export, characters written)."""
    sink = Discard()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        await export_to(settings, sink)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base, sink.chars
