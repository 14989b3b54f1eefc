"""docs/portal.md, "Monthly report", in a real browser on both databases, as a reseller:
request a month's report, watch htmx turn its Generating into Ready without a reload
(the job runs in the `serve` process beside its dispatcher), download the CSV and find
the arranged lines in it. axe-core finds no serious or critical violation. With
CLOUDADMIN_SCREENSHOTS=1 the page is saved to docs/images/portal-reports.png."""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime

import pytest
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Addendum, Client
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot
from tests.portal.test_activity_events_browser import driver_of, sign_in

pytestmark = pytest.mark.slow

# A month no other test's addendums reach.
MONTH = "2011-03"


def wait_for(page: Page, condition: str, timeout: float = TIMEOUT) -> None:
    """Until the JavaScript ``condition`` holds (htmx swaps without a new page)."""
    WebDriverWait(driver_of(page), timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(f"return {condition}"), f"waiting for {condition}"
    )


def arrange(portal: Portal) -> list[list[str]]:
    """Addendums of the reseller's client under plans of this test's own, around March
    2011; the report's lines for those plans."""
    plan = random.randrange(10_000_000, 90_000_000)
    client = portal.people.client_id

    def row(plan_id: int, start: datetime, end: datetime | None) -> Addendum:
        return Addendum(
            client_id=client,
            reseller_id=portal.people.reseller_id,
            status="active",
            active_start=start,
            active_end=end,
            created_at=start,
            currency_id=1,
            currency_char_code="USD",
            currency_symbol="$",
            plan_id=plan_id,
            plan_name=f"Plan {plan_id}",
            product_id=7,
            product_name="Reports product",
            product_internal_name="CDN",
        )

    async def make(session: AsyncSession) -> str:
        session.add_all(
            [
                row(plan, datetime(2011, 1, 1, tzinfo=UTC), None),  # 31 days
                row(plan, datetime(2011, 3, 31, 12, tzinfo=UTC), None),  # 1
                row(plan + 1, datetime(2011, 2, 20, tzinfo=UTC), datetime(2011, 3, 3, tzinfo=UTC)),
            ]
        )
        found = await session.execute(select(Client.company_name).where(Client.id == client))
        return str(found.scalar_one())

    company = portal.arrange(make)
    base = [str(client), company, "7", "Reports product"]
    return [
        [*base, str(plan), f"Plan {plan}", "2", "32"],
        [*base, str(plan + 1), f"Plan {plan + 1}", "1", "2"],
    ]


def test_a_reseller_requests_a_report_and_downloads_it_when_ready(page: Page, portal: Portal):
    expected = arrange(portal)
    plans = {line[4] for line in expected}
    sign_in(page, portal, "reseller")
    page.open(portal.url("/portal/billing/reports"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Billing: monthly reports"
    # A month input: its value is YYYY-MM whatever the browser's locale shows.
    page.evaluate(f"document.getElementById('f-month').value = '{MONTH}'")
    page.click("form.report-request button")
    assert page.evaluate("location.pathname") == "/portal/billing/reports"
    assert MONTH in page.text()
    # The list turns Ready by itself: htmx polls it, the page is not loaded again.
    page.evaluate("window.stillTheSamePage = true")
    wait_for(page, "document.querySelector('#reports a[href$=\"/download\"]') !== null", 60)
    assert page.evaluate("window.stillTheSamePage") is True
    listed = page.evaluate("document.getElementById('reports').textContent")
    assert "Ready" in listed and "Generating" not in listed
    page.evaluate("window.scrollTo(0, document.querySelector('main').offsetTop - 8)")
    screenshot(page, "portal-reports")
    assert page.axe_problems() == []
    assert page.console_problems() == []
    text = page.evaluate(
        "fetch(document.querySelector('#reports a[href$=\"/download\"]').href).then(r => r.text())"
    )
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][-2:] == ["addendums", "active_days"]
    assert [line for line in lines[1:] if line[4] in plans] == expected
