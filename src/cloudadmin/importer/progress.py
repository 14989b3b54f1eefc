"""How the importer and the exporter tell how far they are (docs/import.md, "Progress").

The loader calls a ``PhaseProgress``: a phase starts with its number of records (or
None when unknown) and advances chunk by chunk. ``NO_PROGRESS`` does nothing; the
commands use ``TerminalProgress`` when their standard error is a terminal, so that
redirected output stays exactly as it was.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType
from typing import IO, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text


class PhaseProgress(Protocol):
    def phase(self, name: str, total: int | None, unit: str = "records") -> None:
        """Starts a phase (and ends the previous one); ``unit`` names what is counted."""

    def advance(self, records: int) -> None:
        """``records`` more records of the current phase are done."""


class NoProgress:
    def phase(self, name: str, total: int | None, unit: str = "records") -> None:
        pass

    def advance(self, records: int) -> None:
        pass


NO_PROGRESS = NoProgress()


class RateColumn(ProgressColumn):
    """Records per second over the whole phase (rich's speed is a moving window, which
    jumps between chunks)."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed
        if not elapsed or not task.completed:
            return Text("", style="progress.data.speed")
        unit = task.fields.get("unit", "records")
        return Text(f"{task.completed / elapsed:,.0f} {unit}/s", style="progress.data.speed")


class TerminalProgress(AbstractContextManager["TerminalProgress"]):
    """One rich progress line per phase on a terminal: records done of the total,
    the rate and the time taken. Finished phases stay on the screen."""

    def __init__(self, stream: IO[str]) -> None:
        console = Console(file=stream, stderr=False)
        self._progress = Progress(
            TextColumn("{task.description:<18}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            console=console,
            # Chunks of 5,000 records arrive a few times a second at most.
            refresh_per_second=4,
        )
        self._task: TaskID | None = None

    def phase(self, name: str, total: int | None, unit: str = "records") -> None:
        self._finish()
        self._task = self._progress.add_task(name, total=total, unit=unit)

    def advance(self, records: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, records)

    def _finish(self) -> None:
        if self._task is not None:
            task = self._progress.tasks[-1]
            if task.total is None:
                self._progress.update(self._task, total=task.completed)
            self._progress.stop_task(self._task)
            self._task = None

    def __enter__(self) -> TerminalProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish()
        self._progress.stop()


def for_stream(stream: IO[str]) -> TerminalProgress | None:
    """A terminal progress display on ``stream``, or None when it is not a terminal."""
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return None
    return TerminalProgress(stream)
