"""docs/portal.md, "Billing", in a real browser on both databases, as a reseller: filter
the addendums (htmx swaps the table and puts the filters in the address), order by a
column, go to the next and the last page, download the CSV of the filtered list and
check it, open the chart (its SVG image loads, its figures are a table). axe-core finds
no serious or critical violation on either page. With CLOUDADMIN_SCREENSHOTS=1 the list
and the chart are saved to docs/images/portal-billing.png and portal-billing-chart.png."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy.ext.asyncio import AsyncSession

from tests.billing.helpers import addendum_row, insert_addendums
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot, sign_in
from tests.portal.test_activity_events_browser import driver_of

pytestmark = pytest.mark.slow

COUNT = 60


# htmx marks what it is requesting, swapping or settling with these classes.
_HTMX_BUSY = "document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"


def wait_for(page: Page, condition: str) -> None:
    """Until the JavaScript ``condition`` holds and htmx has finished its swap (a swap
    happens without a new page)."""
    script = f"return Boolean({condition}) && {_HTMX_BUSY} === null"
    WebDriverWait(driver_of(page), TIMEOUT, poll_frequency=0.05).until(
        lambda d: d.execute_script(script), f"waiting for {condition}"
    )


def tall(page: Page, name: str) -> None:
    """The screenshot ``name`` of the page from its top, in a taller window."""
    driver = driver_of(page)
    driver.set_window_size(1280, 1500)
    try:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, name)
    finally:
        driver.set_window_size(1200, 800)


def table_ids(page: Page) -> list[int]:
    found = page.evaluate(
        "Array.from(document.querySelectorAll('table.addendums tbody tr td:first-child'))"
        ".map(td => td.textContent.trim())"
    )
    return [int(text) for text in found]


def click(page: Page, selector: str) -> None:
    """Clicks without waiting for a new page (htmx swaps a part)."""
    page.evaluate(f"document.querySelector({json.dumps(selector)}).click()")


def arrange(portal: Portal, plan: str) -> list[dict[str, Any]]:
    """COUNT addendums of the reseller's client under a plan name of their own, created
    one hour apart in the reverse order of their ids, active in recent months; and one
    of the other reseller's client under the same plan name."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    rows = [
        addendum_row(
            portal.people.client_id,
            reseller_id=portal.people.reseller_id,
            plan_name=plan,
            product_id=(1, 2, 10)[i % 3],
            status=("active", "paused", "stopped")[i % 3],
            created_at=now - timedelta(hours=i + 1),
            active_start=now - timedelta(days=30 * (i % 6) + 1),
            active_end=None if i % 2 else now + timedelta(days=40),
        )
        for i in range(COUNT)
    ]
    theirs = addendum_row(
        portal.people.other_client_id, reseller_id=portal.people.other_reseller_id, plan_name=plan
    )

    async def make(session: AsyncSession) -> None:
        await insert_addendums(session, [*rows, theirs])

    portal.arrange(make)
    return rows


def test_a_reseller_filters_orders_pages_downloads_and_charts_addendums(page: Page, portal: Portal):
    plan = f"Browse plan {uuid.uuid4().hex[:8]}"
    rows = arrange(portal, plan)
    ids = sorted(r["id"] for r in rows)
    by_creation = [r["id"] for r in sorted(rows, key=lambda r: r["created_at"])]
    sign_in(page, portal, "reseller")
    page.open(portal.url("/portal/billing"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Billing: addendums"

    # Filter by the plan's name (under "More filters"): htmx swaps the table in.
    click(page, "details.more-filters summary")
    page.evaluate(f"document.getElementById('f-plan_name').value = {json.dumps(plan.upper())}")
    click(page, "#billing-filters button[type=submit]")
    wait_for(page, "location.search.includes('plan_name=')")
    wait_for(page, "document.body.innerText.includes('60 addendums, page 1 of 3')")
    assert table_ids(page) == ids[:25]  # the other tenant's addendum is not among them

    # Order by creation (the column head), then the next page and the last.
    click(page, "th a[href*='ordering=created_at']")
    wait_for(page, "document.querySelector('th[aria-sort=ascending]') !== null")
    assert table_ids(page) == by_creation[:25]
    assert "ordering=created_at" in page.evaluate("location.search")
    page.evaluate("document.querySelector('details.more-filters').open = false")
    tall(page, "portal-billing")
    click(page, "a[rel=next]")
    wait_for(page, "document.body.innerText.includes('page 2 of 3')")
    assert table_ids(page) == by_creation[25:50]
    click(page, ".pager a:last-child")
    wait_for(page, "document.body.innerText.includes('page 3 of 3')")
    assert table_ids(page) == by_creation[50:]
    assert page.axe_problems() == []

    # The CSV: every row of the filtered list, in its order.
    text = page.evaluate("fetch(document.querySelector('a[download]').href).then(r => r.text())")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][:4] == ["id", "client_id", "client_company_name", "status"]
    assert [int(r[0]) for r in table[1:]] == by_creation
    assert {r[11] for r in table[1:]} == {plan}

    # The chart of these addendums: its image loads, its figures are a table.
    page.click("a[href^='/portal/billing/chart?']")
    assert "active addendums per product" in page.evaluate(
        "document.querySelector('h1').textContent"
    )
    wait_for(page, "document.querySelector('figure img').complete")
    assert page.evaluate("document.querySelector('figure img').naturalWidth") > 400
    figures = page.evaluate(
        "Array.from(document.querySelectorAll('table.chart-figures tfoot td'))"
        ".map(td => td.textContent.trim())"
    )
    assert len(figures) == 12 and figures[-1] == str(COUNT)  # all active this month
    assert page.axe_problems() == []
    tall(page, "portal-billing-chart")
    assert page.console_problems() == []
