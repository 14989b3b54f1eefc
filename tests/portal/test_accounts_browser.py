"""docs/portal.md, "Accounts", in a real browser on both databases, as a reseller and as
an operator: filter (htmx swaps the table and pushes the address), sort, page, save and
apply a preset, download the CSV, create, edit and delete an account; another tenant's
account is the 404 page. With CLOUDADMIN_SCREENSHOTS=1 the list and an account's page
are saved to docs/images/portal-accounts.png and portal-account.png."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.factories import make_client
from tests.portal.browser import Page
from tests.portal.conftest import Portal, screenshot, sign_in

pytestmark = pytest.mark.slow


def rows(page: Page) -> list[list[str]]:
    return list(
        page.evaluate(
            "Array.from(document.querySelectorAll('table.accounts tbody tr'))"
            ".map(r => Array.from(r.cells).map(c => c.textContent.trim()))"
        )
    )


def set_value(page: Page, element_id: str, value: str) -> None:
    page.evaluate(f"document.getElementById({json.dumps(element_id)}).value = {json.dumps(value)}")


def download(page: Page) -> list[list[str]]:
    """The CSV the list's link gives, fetched with the browser's own cookies."""
    text = page.evaluate("fetch(document.querySelector('a[download]').href).then(r => r.text())")
    return list(csv.reader(io.StringIO(text)))


def arrange_companies(portal: Portal, reseller_id: int, count: int) -> str:
    prefix = f"Browse {uuid.uuid4().hex[:6]}"

    async def make(session: AsyncSession) -> None:
        for n in range(count):
            await make_client(session, reseller_id=reseller_id, company_name=f"{prefix} {n:02d}")

    portal.arrange(make)
    return prefix


def test_a_reseller_finds_creates_edits_and_deletes_accounts(page: Page, portal: Portal):
    people = portal.people
    prefix = arrange_companies(portal, people.reseller_id, 30)
    sign_in(page, portal, "reseller")
    page.open(portal.url("/portal/accounts"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Accounts"

    # Filter: htmx swaps the table in and puts the filters in the address.
    set_value(page, "f-company", prefix.upper())
    page.evaluate("document.querySelector('#filters button').click()")
    page.wait_until("location.search.includes('company=')")
    page.wait_until("document.querySelectorAll('table.accounts tbody tr').length == 25")
    assert "30 accounts, page 1 of 2" in page.text()
    assert rows(page)[0][1] == f"{prefix} 00"

    # Sort by company, descending (the column head twice), then the next page.
    page.evaluate("document.querySelector('th[aria-sort] a[href*=companyName]').click()")
    ascending = "th[aria-sort=ascending] a[href*='ordering=-companyName']"
    page.wait_until(f"document.querySelector({json.dumps(ascending)}) !== null")
    page.evaluate(f"document.querySelector({json.dumps(ascending)}).click()")
    page.wait_until("document.querySelector('th[aria-sort=descending]') !== null")
    assert rows(page)[0][1] == f"{prefix} 29"
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "portal-accounts")
    assert page.axe_problems() == []
    page.evaluate("document.querySelector('a[rel=next]').click()")
    page.wait_until("document.body.innerText.includes('page 2 of 2')")
    assert [r[1] for r in rows(page)] == [f"{prefix} {n:02d}" for n in range(4, -1, -1)]
    assert "ordering=-companyName" in page.evaluate("location.search")

    # The CSV: every page of the filtered list, in its order.
    table = download(page)
    assert table[0][:4] == ["id", "email", "name", "companyName"]
    assert [r[3] for r in table[1:]] == [f"{prefix} {n:02d}" for n in range(29, -1, -1)]

    # A bad filter: the whole page, with the field's message and what was typed.
    set_value(page, "f-id", "abc")
    page.evaluate("document.querySelector('#filters button').click()")
    page.wait_until("document.getElementById('e-id') !== null")
    assert page.evaluate("document.getElementById('f-id').value") == "abc"
    # The list's ordering (in the swapped part, outside the form) went with the filters.
    assert "ordering=-companyName" in page.evaluate("location.search")
    set_value(page, "f-id", "")
    page.evaluate("document.querySelector('#filters button').click()")
    page.wait_until("document.querySelectorAll('table.accounts tbody tr').length == 25")

    # Save the filters as a preset, clear them, apply the preset.
    set_value(page, "f-preset_name", f"{prefix} only")
    page.click(".save-preset button")
    assert "The preset was saved." in page.text()
    page.open(portal.url("/portal/accounts"))
    assert page.evaluate("document.getElementById('f-company').value") == ""
    page.click(f"a[href='/portal/accounts?company={prefix.upper().replace(' ', '+')}']")
    assert page.evaluate("document.getElementById('f-company').value") == prefix.upper()
    assert "30 accounts" in page.text()

    # Create an account with its first user.
    page.click("a[href='/portal/accounts/new']")
    assert page.axe_problems() == []
    set_value(page, "f-product_CDN", "false")
    company = f"{prefix} New"
    page.fill_and_submit(
        {
            "f-email": f"{uuid.uuid4().hex[:8]}@created.example",
            "f-password": "twelve unusual words",
            "f-company": company,
            "f-name": "Nia New",
        }
    )
    assert "The account was created." in page.text()
    assert company in page.evaluate("document.querySelector('h1').textContent")
    assert "Nia New" in page.text()
    screenshot(page, "portal-account")
    assert page.axe_problems() == []

    # Edit it: a refusal first (kept as typed), then a change.
    page.click("a[href$='/edit']")
    page.fill_and_submit({"f-companyName": " "})
    assert "The form was not accepted" in page.text()
    assert page.axe_problems() == []
    # The refusal's own 400 is all the console says (reading the log empties it).
    assert [p for p in page.console_problems() if "status of 400" not in p] == []
    page.fill_and_submit({"f-companyName": f"{prefix} Renamed", "f-custom_id": "X-1"})
    assert "The account was saved." in page.text()
    assert f"{prefix} Renamed" in page.text() and "X-1" in page.text()

    # Delete it.
    page.click("a[href$='/delete']")
    assert page.axe_problems() == []
    page.click("main form button")
    assert "The account was deleted." in page.text()
    set_value(page, "f-company", f"{prefix} Renamed")
    page.evaluate("document.querySelector('#filters button').click()")
    page.wait_until("document.body.innerText.includes('No account matches the filters.')")

    # Another tenant's account: the 404 page.
    page.open(portal.url(f"/portal/accounts/{people.other_client_id}"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Not found"
    assert page.console_problems() == []


def test_an_operator_sees_every_account_and_creates_one_for_a_reseller(page: Page, portal: Portal):
    people = portal.people
    sign_in(page, portal, "operator")
    page.open(portal.url(f"/portal/accounts?id={people.other_client_id}"))
    assert [int(r[0]) for r in rows(page)] == [people.other_client_id]
    table = download(page)
    assert [int(r[0]) for r in table[1:]] == [people.other_client_id]

    page.open(portal.url("/portal/accounts/new"))
    company = f"Operator made {uuid.uuid4().hex[:6]}"
    page.fill_and_submit(
        {
            "f-email": f"{uuid.uuid4().hex[:8]}@operator.example",
            "f-password": "another unusual secret",
            "f-company": company,
            "f-reseller": str(people.other_reseller_id),
        }
    )
    assert "The account was created." in page.text()
    reseller = page.evaluate(
        "Array.from(document.querySelectorAll('dl.details dt'))"
        ".find(d => d.textContent == 'Reseller').nextElementSibling.textContent"
    )
    assert reseller == str(people.other_reseller_id)
    page.open(portal.url("/portal/accounts/2147483647"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Not found"
    assert page.console_problems() == []
