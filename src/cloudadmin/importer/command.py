"""`cloudadmin load FILE|-` and the loader behind `cloudadmin serve --demo`."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import Coroutine
from contextlib import nullcontext
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cloudadmin.billing.addendums import bulk_counts
from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine, create_sessionmaker
from cloudadmin.importer import document_parts, fast_json
from cloudadmin.importer.catalogue import record_count
from cloudadmin.importer.loader import LoadReport, load_document
from cloudadmin.importer.problems import LoadError, Problem
from cloudadmin.importer.progress import NO_PROGRESS, PhaseProgress, for_stream
from cloudadmin.kit.crypto import SecretBox, configure_password_hashing


def parse_document(text: str) -> Any:
    """JSON with exact decimals: prices must not pass through binary floats."""
    try:
        return json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise LoadError(
            [Problem("", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
        ) from exc


def read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    return Path(source).read_text(encoding="utf-8")


def read_document(source: str, in_parts: bool = True) -> Any:
    """The parsed document of FILE (or "-" for stdin).

    A large file is read in parts where it can be (importer/document_parts.py: its
    addendums are then read as the load needs them), unless ``in_parts`` is False.
    A file is parsed by the faster parser when it can (importer/fast_json.py);
    otherwise, and for stdin, it is read and parsed as text, so the result and
    every error message are those of ``json.loads``."""
    if source != "-":
        path = Path(source)
        if in_parts and path.stat().st_size >= document_parts.STREAM_BYTES:
            streamed = document_parts.read(path, bulk_counts.BULK_THRESHOLD)
            if streamed is not None:
                return streamed
        document = fast_json.parse_bytes(path.read_bytes())
        if document is not fast_json.NOT_PARSED:
            return document
    return parse_document(read_source(source))


async def load_into(
    target: Settings | AsyncEngine | async_sessionmaker[AsyncSession],
    document: dict[str, Any],
    secret_box: SecretBox | None = None,
    progress: PhaseProgress = NO_PROGRESS,
) -> LoadReport:
    """Load ``document`` in one transaction and commit it.

    ``target`` is the settings (an engine is opened and closed here), an engine,
    or a session factory; ``secret_box`` defaults to one under the settings' key.
    """
    if isinstance(target, Settings):
        configure_password_hashing(target.password_hash_time_cost, target.password_hash_memory_kib)
        box = secret_box or SecretBox(*target.secret_keys())
        engine = create_engine(target)
        try:
            return await load_into(engine, document, box, progress)
        finally:
            await engine.dispose()
    if secret_box is None:
        raise TypeError("secret_box is required unless settings are given")
    factory = create_sessionmaker(target) if isinstance(target, AsyncEngine) else target
    async with factory() as session, session.begin():
        return await load_document(session, document, secret_box, progress)


T = TypeVar("T")


def run_on_fast_loop(work: Coroutine[Any, Any, T]) -> T:
    """Runs the load's coroutine on uvloop where it is installed (uvicorn's standard
    extras bring it, as for the service), else on asyncio's own loop. The COPY's writes
    and the loop's polling cost the loader a few per cent of its CPU on asyncio's loop:
    four alternating pairs of a 1M-addendum load took 30.0 s on uvloop against 32.8 s
    (docs/performance.md, "The bulk load: what it costs and why")."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - a platform without uvloop (Windows)
        return asyncio.run(work)
    return uvloop.run(work)


def _load_file(
    settings: Settings, source: str, progress: PhaseProgress, in_parts: bool
) -> LoadReport:
    progress.phase("reading", None)
    # A load makes millions of short-lived objects (a part's records, their COPY rows)
    # beside long-lived ones (the parsed document, or the counters of the rows gone by),
    # and hardly a reference cycle: the cyclic GC only scans them again and again. It
    # took half the time of parsing a whole document, and 88 s of 126 s loading ten
    # million addendums read in parts (2.4 s of 10.5 s for a million), its full
    # collections walking the growing counters each time. This process owns the heap:
    # the collector is off for the load.
    gc.disable()
    try:
        document = read_document(source, in_parts)
        progress.advance(record_count(document) or 0)
        return run_on_fast_loop(load_into(settings, document, progress=progress))
    finally:
        gc.enable()


def run_load(
    settings: Settings, source: str, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Load FILE (or "-" for stdin); 0 when committed, 1 with problems on ``err``.

    The schema must exist already (the CLI migrates first).
    """
    out = out or sys.stdout
    err = err or sys.stderr
    # Progress only on a terminal: redirected output stays exactly the summary or the
    # problems.
    display = for_stream(err)
    try:
        with display or nullcontext():
            progress: PhaseProgress = display or NO_PROGRESS
            try:
                report = _load_file(settings, source, progress, in_parts=True)
            except document_parts.Unstreamable:
                # A part of the file could not be read after all (the transaction
                # rolled back): read it whole.
                report = _load_file(settings, source, progress, in_parts=False)
    except LoadError as exc:
        for line in exc.lines():
            print(f"error: {line}", file=err)
        return 1
    except OSError as exc:
        print(f"error: cannot read {source}: {exc.strerror or exc}", file=err)
        return 1
    print(report.summary(), file=out)
    return 0
