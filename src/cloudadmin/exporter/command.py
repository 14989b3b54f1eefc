"""`cloudadmin export [FILE|-]`: the landscape as a document `load` reads (not a backup:
docs/operations.md, "Backup and restore")."""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import IO

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.exporter.document import ExportReport, export_document, snapshot
from cloudadmin.importer.progress import NO_PROGRESS, PhaseProgress, for_stream


async def export_to(
    settings: Settings, stream: IO[str], progress: PhaseProgress = NO_PROGRESS
) -> ExportReport:
    engine = create_engine(settings)
    try:
        async with snapshot(engine) as conn:
            return await export_document(conn, stream.write, progress)
    finally:
        await engine.dispose()


def run_export(
    settings: Settings,
    target: str = "-",
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Export to FILE (or "-" for stdout); 0 when written, 1 with the reason on ``err``.

    A file is written beside its final name and renamed into place at the end, so an
    interrupted export never leaves half a document under that name.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    display = for_stream(err)
    progress: PhaseProgress = display or NO_PROGRESS
    if target == "-":
        try:
            with display or nullcontext():
                asyncio.run(export_to(settings, out, progress))
            out.flush()
        except BrokenPipeError:
            # The reader went away (`export - | head`): stop quietly, as other tools do.
            if out is sys.stdout:
                # Python would flush stdout again at exit and complain about the pipe.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        return 0
    path = Path(target)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with display or nullcontext(), partial.open("w", encoding="utf-8", newline="\n") as fh:
            report = asyncio.run(export_to(settings, fh, progress))
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        print(f"error: cannot write {target}: {exc.strerror or exc}", file=err)
        return 1
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    print(report.summary(), file=out)
    return 0
