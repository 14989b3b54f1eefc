"""The monthly reports' job: runs in the process that runs the dispatcher (`cloudadmin
worker`, and `serve` with CLOUDADMIN_RUN_DISPATCHER), beside it, on its engine.

A pass takes the oldest report no job holds (one conditional UPDATE: a lease of
LEASE_SECONDS, its attempt counted), computes it with one grouped query on a read
connection of its own (no transaction held while it reads) and ends it Ready with its
CSV, only if it still holds the lease. A job that raises ends it Failed with a generic
reason, the error logged. A process that dies leaves the lease to pass: the next pass,
in any process, takes the report again, and after MAX_ATTEMPTS takes marks it Failed.
A database out of reach leaves the report as it is, for a later pass.

The job looks for work when a report is requested in this process (after its commit),
and every POLL_SECONDS otherwise (a report requested in another process, a lease that
passed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from cloudadmin.billing.reports import repository, service
from cloudadmin.billing.reports.repository import Outcome, failed, ready
from cloudadmin.db.engine import autocommit_engine
from cloudadmin.db.types import utcnow
from cloudadmin.db.unavailable import is_unavailable

log = logging.getLogger("cloudadmin.reports")

POLL_SECONDS = 2.0
LEASE_SECONDS = 600.0
MAX_ATTEMPTS = 3
UNEXPECTED = "The report could not be computed."
ABANDONED = "The report's job stopped before it finished, {n} times."


def _unreachable(exc: BaseException) -> bool:
    return isinstance(exc, OSError | TimeoutError) or is_unavailable(exc)


class ReportJobs:
    """The job loop of one process."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        poll_seconds: float = POLL_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        max_attempts: int = MAX_ATTEMPTS,
        owner: str | None = None,
    ) -> None:
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)
        self.reader = autocommit_engine(engine)
        self.poll_seconds = poll_seconds
        self.lease = timedelta(seconds=lease_seconds)
        self.max_attempts = max_attempts
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Passes until ``stop`` is set; never raises but a cancellation."""
        loop = asyncio.get_running_loop()

        def woken() -> None:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(self._wake.set)

        forget = service.on_request(woken)
        try:
            while not stop.is_set():
                self._wake.clear()
                try:
                    worked = await self.run_once()
                except Exception as exc:
                    worked = False
                    if _unreachable(exc):
                        log.warning("reports: database out of reach (%s)", type(exc).__name__)
                    else:
                        log.exception("reports: the job's pass failed")
                if worked:
                    continue
                await self._idle(stop)
        finally:
            forget()

    async def _idle(self, stop: asyncio.Event) -> None:
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
        try:
            await asyncio.wait(waits, timeout=self.poll_seconds, return_when="FIRST_COMPLETED")
        finally:
            for waiting in waits:
                waiting.cancel()

    async def run_once(self) -> bool:
        """Takes and ends one report; False when there was none to take."""
        now = utcnow()
        # Looked for without a transaction (on SQLite: without the write lock), then taken.
        async with self.reader.connect() as conn:
            report_id = await repository.next_takeable(conn, now)
        if report_id is None:
            return False
        async with self.sessions() as session, session.begin():
            taken = await repository.claim(session, report_id, self.owner, now, now + self.lease)
        if taken is None:
            return True  # another job took it first: look again
        if taken > self.max_attempts:
            log.error("report %s: its job stopped %d times; marked failed", report_id, taken - 1)
            await self._end(report_id, failed(ABANDONED.format(n=taken - 1)))
            return True
        await self._compute(report_id)
        return True

    async def _compute(self, report_id: int) -> None:
        async with self.sessions() as session:
            report = await repository.one_by_id(session, report_id)
        if report is None:
            return
        try:
            async with self.reader.connect() as conn:
                content, lines = await service.compute(conn, report.month, report.scope_account_id)
        except Exception as exc:
            if _unreachable(exc):
                # Left Generating under this job's lease: taken again once it passes.
                log.warning("report %s not computed (database: %s)", report_id, type(exc).__name__)
                return
            log.exception("report %s failed", report_id)
            await self._end(report_id, failed(UNEXPECTED))
            return
        await self._end(report_id, ready(content, lines))
        log.info("report %s of %s ready: %d lines", report_id, report.month, lines)

    async def _end(self, report_id: int, outcome: Outcome) -> None:
        async with self.sessions() as session, session.begin():
            ended = await repository.end(session, report_id, self.owner, utcnow(), outcome)
        if not ended:
            log.warning("report %s: its lease had passed; left to the job that took it", report_id)


async def run_report_jobs(engine: AsyncEngine, stop: asyncio.Event) -> None:
    """The job loop on ``engine`` until ``stop``: what `worker` and `serve` run beside
    the dispatcher."""
    await ReportJobs(engine).run(stop)
