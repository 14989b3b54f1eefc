"""docs/portal.md, "Monthly report", over HTTP on both databases: a report requested in
the portal is computed by the job of a real `cloudadmin worker` (and, in-process, by
the job loop that `worker` and `serve` run), its CSV holds what was arranged (active
days counted at the month's edges), each scope sees only its own reports, a bad month
writes nothing, and a job that raises or whose process died ends Failed."""

from __future__ import annotations

import asyncio
import csv
import io
import logging
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.billing.reports import repository, runner, service
from cloudadmin.billing.reports.runner import ReportJobs
from cloudadmin.db.models import ActivityLogEntry, Addendum, Client, MonthlyReport
from cloudadmin.db.types import utcnow
from cloudadmin.web.app_state import app_state
from tests.deploy.processes import Process, start
from tests.portal.people import People, sign_in
from tests.waiting import until

MONTH = "2026-02"  # 28 days
PAGE = "/portal/billing/reports"


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def addendum(
    client_id: int,
    start: datetime,
    end: datetime | None,
    *,
    product: int = 1,
    plan: int = 10,
    reseller_id: int | None = None,
) -> Addendum:
    return Addendum(
        client_id=client_id,
        reseller_id=reseller_id,
        status="active",
        active_start=start,
        active_end=end,
        created_at=start,
        currency_id=1,
        currency_char_code="EUR",
        currency_symbol="€",
        plan_id=plan,
        plan_name=f"Plan {plan}",
        product_id=product,
        product_name=f"Product {product}",
        product_internal_name="CDN",
    )


async def arrange_addendums(session: AsyncSession, people: People) -> dict[str, list[list[str]]]:
    """Addendums around February 2026 for the first reseller's client and the other
    reseller's; the CSV lines (without the header) each scope's report must hold."""
    mine, other = people.client_id, people.other_client_id
    session.add_all(
        [
            # Plan 10: the whole month (28), the month's last second (1), half a day
            # ending at midnight (1); ended at the month's start and starting right after
            # it: not in it.
            addendum(mine, at(2026, 1, 15), None, reseller_id=people.reseller_id),
            addendum(mine, at(2026, 2, 28, 23, 59, 59), None),
            addendum(mine, at(2026, 2, 10, 12), at(2026, 2, 11)),
            addendum(mine, at(2026, 1, 1), at(2026, 2, 1)),
            addendum(mine, at(2026, 3, 1), None),
            # Plan 11: ends one second into the month (1).
            addendum(mine, at(2026, 1, 31, 23), at(2026, 2, 1, 0, 0, 1), plan=11),
            # Product 2: the month's last two days, and on past it (2).
            addendum(mine, at(2026, 2, 27, 10), at(2026, 3, 5), product=2, plan=20),
            # The other reseller's client: the whole month.
            addendum(other, at(2025, 12, 1), at(2026, 4, 1), reseller_id=people.other_reseller_id),
        ]
    )
    await session.commit()
    company = {mine: "", other: ""}
    for cid in company:
        company[cid] = await _company(session, cid)
    reseller = [
        [str(mine), company[mine], "1", "Product 1", "10", "Plan 10", "3", "30"],
        [str(mine), company[mine], "1", "Product 1", "11", "Plan 11", "1", "1"],
        [str(mine), company[mine], "2", "Product 2", "20", "Plan 20", "1", "2"],
    ]
    other_lines = [[str(other), company[other], "1", "Product 1", "10", "Plan 10", "1", "28"]]
    return {"reseller": reseller, "other_reseller": other_lines, "operator": reseller + other_lines}


async def _company(session: AsyncSession, client_id: int) -> str:
    name = (
        await session.execute(select(Client.company_name).where(Client.id == client_id))
    ).scalar_one()
    await session.rollback()
    return str(name)


def report_ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r"/portal/billing/reports/(\d+)/download", page)]


async def request(client: httpx.AsyncClient, token: str, month: str) -> httpx.Response:
    return await client.post(PAGE, data={"month": month, "csrf_token": token})


async def ready_ids(client: httpx.AsyncClient, expected: int) -> list[int]:
    """The ids of the ready reports on the list, once ``expected`` are."""
    seen: list[str] = []

    async def ready() -> bool:
        page = await client.get(PAGE)
        seen[:] = [page.text]
        return len(report_ids(page.text)) >= expected

    await until(ready, lambda: f"{expected} ready report(s); the list: {seen[-1][-1500:]}", 60)
    return report_ids(seen[-1])


def csv_lines(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(service.HEADER)
    return rows[1:]


@asynccontextmanager
async def job_loop(app: Any) -> AsyncIterator[ReportJobs]:
    """The job loop `worker` and `serve` run, in this process."""
    jobs = ReportJobs(app_state(app).engine, poll_seconds=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(jobs.run(stop))
    try:
        yield jobs
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


@pytest.fixture
def worker(database_url: str, tmp_path: Path) -> Any:
    """Starts a real `cloudadmin worker` on the test's database when called."""
    started: list[Process] = []

    def run() -> Process:
        env = {
            **os.environ,
            "CLOUDADMIN_DATABASE_URL": database_url,
            "CLOUDADMIN_SECRET_KEY": "test-secret-key",
            "CLOUDADMIN_DATA_DIR": str(tmp_path / "worker"),
        }
        process = start("worker", ["worker"], env, tmp_path)
        started.append(process)
        return process

    yield run
    for process in started:
        process.stop()


@pytest.mark.slow
async def test_a_report_is_computed_by_the_worker_and_downloads_as_csv(
    app: Any, client: httpx.AsyncClient, session: AsyncSession, people: People, worker: Any
):
    expected = await arrange_addendums(session, people)
    token = await sign_in(client, people.emails["reseller"])
    empty = await client.get(PAGE)
    assert empty.status_code == 200 and "No reports yet." in empty.text
    asked = await request(client, token, MONTH)
    assert asked.status_code == 303 and asked.headers["location"] == PAGE
    listed = await client.get(PAGE)
    assert "Generating" in listed.text and 'hx-trigger="every 2s"' in listed.text
    # htmx polls only the list, which stops polling once nothing is generating.
    part = await client.get(PAGE, headers={"HX-Request": "true"})
    assert part.text.lstrip().startswith('<div id="reports"') and "<h1>" not in part.text
    running = worker()
    try:
        (report_id,) = await ready_ids(client, 1)
    except AssertionError:
        raise AssertionError(running.tail()) from None
    part = await client.get(PAGE, headers={"HX-Request": "true"})
    assert "hx-trigger" not in part.text and "Ready" in part.text
    download = await client.get(f"{PAGE}/{report_id}/download")
    assert download.status_code == 200, download.text
    assert download.headers["content-type"].startswith("text/csv")
    assert f"monthly-report-{MONTH}-{report_id}.csv" in download.headers["content-disposition"]
    assert csv_lines(download.text) == expected["reseller"]
    # The request is in the activity log as the portal's change.
    actions = (
        await session.execute(
            select(ActivityLogEntry.actions, ActivityLogEntry.user_email).where(
                ActivityLogEntry.method == "POST", ActivityLogEntry.path == PAGE
            )
        )
    ).all()
    assert actions == [("portal.request_monthly_report", people.emails["reseller"])]
    row = (await session.execute(select(MonthlyReport))).scalar_one()
    assert (row.scope_account_id, row.requested_by_email, row.line_count, row.attempts) == (
        people.reseller_id,
        people.emails["reseller"],
        3,
        1,
    )


async def test_each_scope_sees_only_its_own_reports(
    app: Any, client: httpx.AsyncClient, session: AsyncSession, people: People
):
    expected = await arrange_addendums(session, people)
    ids: dict[str, int] = {}
    async with job_loop(app):
        for kind in ("operator", "reseller", "other_reseller"):
            client.cookies.clear()
            token = await sign_in(client, people.emails[kind])
            assert (await request(client, token, MONTH)).status_code == 303
            (ids[kind],) = await ready_ids(client, 1)  # its own only
            got = await client.get(f"{PAGE}/{ids[kind]}/download")
            assert csv_lines(got.text) == expected[kind], kind
    # Another scope's report, by its id: the 404 page, for everyone, operators included.
    for kind, theirs in (("reseller", "other_reseller"), ("operator", "reseller")):
        client.cookies.clear()
        await sign_in(client, people.emails[kind])
        refused = await client.get(f"{PAGE}/{ids[theirs]}/download")
        assert refused.status_code == 404 and "Not found" in refused.text
        assert ids[theirs] not in report_ids((await client.get(PAGE)).text)
    for missing in ("999999", str(2**63 + 5)):
        assert (await client.get(f"{PAGE}/{missing}/download")).status_code == 404
    assert (await client.get(f"{PAGE}/abc/download")).status_code < 500
    # A seller may not open the reports at all.
    client.cookies.clear()
    await sign_in(client, people.emails["seller"])
    assert (await client.get(PAGE)).status_code == 404


async def test_a_bad_month_shows_the_form_again_and_writes_nothing(
    client: httpx.AsyncClient, session: AsyncSession, people: People
):
    token = await sign_in(client, people.emails["operator"])
    next_month = (utcnow().replace(day=28) + timedelta(days=5)).strftime("%Y-%m")
    for typed, message in (
        ("2026-13", "A month as YYYY-MM"),
        ("february", "A month as YYYY-MM"),
        ("1999-12", "A month from 2000 on."),
        (next_month, "The month has not begun yet."),
        ("2026-02\x00", "Contains a character that cannot be stored."),
    ):
        refused = await request(client, token, typed)
        assert refused.status_code == 400, typed
        assert message in refused.text and 'role="alert"' in refused.text
        assert 'aria-invalid="true"' in refused.text
        if "\x00" not in typed:
            assert f'value="{typed}"' in refused.text
    # Without the session's CSRF token: refused before anything is written.
    forged = await client.post(PAGE, data={"month": MONTH})
    assert forged.status_code == 403
    count = select(func.count()).select_from(MonthlyReport)
    assert (await session.execute(count)).scalar_one() == 0
    await session.rollback()  # on SQLite its transaction holds the write lock
    # A report not ready yet has no CSV (409), and says so.
    assert (await request(client, token, MONTH)).status_code == 303
    report_id = (await session.execute(select(MonthlyReport.id))).scalar_one()
    await session.rollback()
    pending = await client.get(f"{PAGE}/{report_id}/download")
    assert pending.status_code == 409 and "not ready" in pending.text


async def test_a_job_that_raises_ends_failed_with_a_generic_reason(
    app: Any,
    client: httpx.AsyncClient,
    session: AsyncSession,
    people: People,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    async def broken(*_: Any) -> tuple[str, int]:
        raise RuntimeError("a secret detail of the failure")

    monkeypatch.setattr(service, "compute", broken)
    token = await sign_in(client, people.emails["reseller"])
    assert (await request(client, token, MONTH)).status_code == 303
    caplog.set_level(logging.ERROR, "cloudadmin.reports")
    async with job_loop(app):

        async def failed() -> bool:
            return "Failed" in (await client.get(PAGE)).text

        await until(failed, "the report marked Failed")
    page = (await client.get(PAGE)).text
    assert runner.UNEXPECTED in page and "secret detail" not in page
    assert report_ids(page) == []
    assert any("secret detail" in (r.exc_text or "") for r in caplog.records)


async def test_a_report_whose_job_died_is_taken_again_then_failed(
    app: Any, session: AsyncSession, people: People
):
    """A lease that passed: the report is taken again (its attempt counted) and
    computed; one taken MAX_ATTEMPTS times already is marked Failed instead. A lease
    still running is left alone."""
    past = utcnow() - timedelta(minutes=1)

    def left(attempts: int, until_: datetime) -> MonthlyReport:
        return MonthlyReport(
            month=MONTH,
            scope_account_id=people.reseller_id,
            requested_by_user_id=people.user_ids["reseller"],
            requested_by_email=people.emails["reseller"],
            status=service.GENERATING,
            attempts=attempts,
            lease_owner="a process that died",
            lease_until=until_,
        )

    again = left(1, past)
    abandoned = left(runner.MAX_ATTEMPTS, past)
    held = left(1, utcnow() + timedelta(minutes=5))
    session.add_all([again, abandoned, held])
    await session.commit()
    again_id, abandoned_id, held_id = again.id, abandoned.id, held.id
    jobs = ReportJobs(app_state(app).engine)
    while await jobs.run_once():
        pass
    session.expire_all()
    got = {
        r.id: (r.status, r.attempts, r.failure, r.lease_owner)
        for r in (await session.execute(select(MonthlyReport))).scalars()
    }
    assert got[again_id] == (service.READY, 2, None, None)
    assert got[abandoned_id] == (
        service.FAILED,
        runner.MAX_ATTEMPTS + 1,
        runner.ABANDONED.format(n=runner.MAX_ATTEMPTS),
        None,
    )
    assert got[held_id] == (service.GENERATING, 1, None, "a process that died")
    # The same report is never ended by a job whose lease passed to another.
    await session.rollback()  # on SQLite its transaction holds the write lock
    other = ReportJobs(app_state(app).engine, owner="late")
    await other._end(held_id, repository.ready("x", 0))
    session.expire_all()
    assert (await session.get(MonthlyReport, held_id)).status == service.GENERATING  # type: ignore[union-attr]
