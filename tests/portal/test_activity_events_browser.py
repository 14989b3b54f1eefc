"""docs/portal.md, "Activity logs" and "Events", in a real browser against a real serve
per database, as an operator and as a reseller: filter the log (htmx), choose columns
(kept after a reload), open a record, download the CSV; the events page with a failing
webhook's health and "retry now", which the serve's own dispatcher then tries against
a real receiver answering 500. axe-core finds no serious or critical violation on the
pages. With CLOUDADMIN_SCREENSHOTS=1: docs/images/portal-activity.png and
portal-events.png."""

from __future__ import annotations

import csv
import io
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import ActivityLogEntry, WebhookDeliveryState, WebhookSubscription
from cloudadmin.db.types import utcnow
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.events.webhooks import refused_status
from cloudadmin.kit.crypto import SecretBox
from tests.factories import make_client, next_id
from tests.portal.browser import TIMEOUT, Page
from tests.portal.conftest import Portal, screenshot
from tests.portal.people import PASSWORD

pytestmark = pytest.mark.slow

HEADER_SECRET = "Bearer browser-hook-s3cret"
KINDS = ["operator", "reseller"]


def driver_of(page: Page) -> WebDriver:
    """The page's WebDriver, for what Page does not wrap: an htmx swap (no new page to
    wait for), a download, a reload."""
    driver: WebDriver = page._driver  # noqa: SLF001
    return driver


def wait_for(page: Page, condition: Callable[[WebDriver], Any], what: str) -> None:
    WebDriverWait(driver_of(page), TIMEOUT, poll_frequency=0.05).until(
        condition, f"waiting for {what}"
    )


def sign_in(page: Page, portal: Portal, kind: str) -> None:
    """The sign-in form filled and sent as a person would (conftest's ``sign_in``, with
    the fields typed again should the page be replaced under them: a node of a document
    the browser has just left is refused now and then)."""
    page.open(portal.url("/portal/sign-in"))
    driver = driver_of(page)

    def typed(d: WebDriver) -> bool:
        try:
            for name, value in (("email", portal.people.emails[kind]), ("password", PASSWORD)):
                field = d.find_element(By.ID, name)
                field.clear()
                field.send_keys(value)
        except WebDriverException:
            return False
        return True

    WebDriverWait(driver, TIMEOUT, poll_frequency=0.05).until(typed, "the sign-in form")
    page.click("main form button")
    assert page.evaluate("location.pathname") == "/portal/"


def until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Polls a condition outside the browser (a receiver's count, a row)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def account_of(portal: Portal, kind: str) -> int:
    return portal.people.operator_account_id if kind == "operator" else portal.people.reseller_id


def row_ids(page: Page) -> list[int]:
    found = page.evaluate(
        "Array.from(document.querySelectorAll('#activity-results tbody tr td:first-child a'))"
        ".map(a => a.textContent)"
    )
    return [int(text) for text in found]


@pytest.mark.parametrize("kind", KINDS)
def test_filter_the_log_choose_columns_open_a_record_and_download_the_csv(
    page: Page, portal: Portal, kind: str, tmp_path: Path
):
    marker = f"/browser/{kind}/{uuid.uuid4().hex[:8]}"
    account = account_of(portal, kind)

    async def arrange(session: AsyncSession) -> list[int]:
        rows = [
            ActivityLogEntry(
                actions="update_client",
                data='{"name": "=cmd", "password": "***"}',
                user_email=f"{kind}-browser@example.com",
                client_id=account,
                token_id=5,
                user_id=1,
                requested_at=utcnow() - timedelta(minutes=n),
                path=marker,
                remote_ip_address="198.51.100.9",
                host="api.example.com",
                method="PATCH",
                query_params="",
                status_code=200 if n else 404,
                reverted=not n,
                request_id=f"browser-{n}",
            )
            for n in range(3)
        ]
        session.add_all(rows)
        await session.flush()
        return [row.id for row in rows]

    made = portal.arrange(arrange)
    sign_in(page, portal, kind)
    page.open(portal.url("/portal/activity"))
    driver = driver_of(page)
    # Filter by the path: htmx swaps the results in and the address keeps the filter.
    driver.find_element(By.ID, "f-path").send_keys(marker)
    driver.find_element(By.CSS_SELECTOR, "form.log-filters button[type=submit]").click()
    wait_for(page, lambda d: "path=" in d.execute_script("return location.search"), "the filter")
    wait_for(page, lambda d: "3 requests" in d.find_element(By.ID, "activity-results").text, "3")
    assert row_ids(page) == sorted(made, reverse=True)
    assert page.evaluate("document.querySelectorAll('h1').length") == 1
    # Choose the columns: the Host instead of the time; kept after a reload.
    driver.find_element(By.CSS_SELECTOR, "details.log-columns summary").click()
    driver.find_element(By.ID, "col-requested_at").click()
    driver.find_element(By.ID, "col-host").click()
    page.click("details.log-columns button[type=submit]")
    assert "path=" in page.evaluate("location.search")  # back to the filtered list
    driver.refresh()
    wait_for(page, lambda d: d.find_elements(By.ID, "activity-results"), "the reloaded list")
    heads = page.evaluate(
        "Array.from(document.querySelectorAll('#activity-results th')).map(t => t.textContent)"
    )
    assert "Host" in heads and "Requested at" not in heads and "Path" in heads
    assert row_ids(page) == sorted(made, reverse=True)
    assert page.axe_problems() == []
    if kind == "operator":
        page.evaluate("document.getElementById('activity-results').scrollIntoView()")
        screenshot(page, "portal-activity")
    # Download the CSV of the filtered list.
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)}
    )
    driver.find_element(By.PARTIAL_LINK_TEXT, "Download these as CSV").click()
    until(
        lambda: (
            any(p.suffix == ".csv" for p in tmp_path.iterdir())
            and not any(p.suffix == ".crdownload" for p in tmp_path.iterdir())
        ),
        "the download",
    )
    [downloaded] = [p for p in tmp_path.iterdir() if p.suffix == ".csv"]
    assert downloaded.name.startswith("activity-log-")
    rows = list(csv.DictReader(io.StringIO(downloaded.read_text(encoding="utf-8"))))
    assert [int(row["id"]) for row in rows] == sorted(made, reverse=True)
    assert {row["path"] for row in rows} == {marker}
    assert {row["client_id"] for row in rows} == {str(account)}
    assert [row["reverted"] for row in rows] == ["false", "false", "true"]
    assert rows[0]["data"] == '{"name": "=cmd", "password": "***"}'
    # Open the newest record, and back to the list.
    page.click(f'#activity-results a[href="/portal/activity/{max(made)}"]')
    assert page.evaluate("document.querySelector('h1').textContent") == f"Request {max(made)}"
    assert marker in page.text() and "198.51.100.9" in page.text()
    assert page.axe_problems() == []
    page.click("main p a")  # Back to the list, its filters kept
    assert "path=" in page.evaluate("location.search")
    assert row_ids(page) == sorted(made, reverse=True)
    # Another tenant's record: the 404 page.
    other = portal.people.other_reseller_id

    async def theirs(session: AsyncSession) -> int:
        found = (
            await session.execute(
                select(ActivityLogEntry.id).where(ActivityLogEntry.client_id == other).limit(1)
            )
        ).scalar()
        if found is not None:
            return int(found)
        row = ActivityLogEntry(
            actions="x", data="", user_email="o@example.com", client_id=other, token_id=1,
            user_id=1, requested_at=utcnow(), path="/x", remote_ip_address="192.0.2.1",
            host="h", method="GET", query_params="", status_code=200, reverted=False,
            request_id="o",
        )  # fmt: skip
        session.add(row)
        await session.flush()
        return row.id

    their_id = portal.arrange(theirs)
    page.open(portal.url(f"/portal/activity/{their_id}"))
    if kind == "reseller":
        assert "There is nothing here, or nothing you may see." in page.text()
    else:
        assert f"Request {their_id}" in page.text()
    assert page.console_problems() == []


class Failing(BaseHTTPRequestHandler):
    """A webhook receiver that answers every POST with 500, counting them."""

    hits = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).hits += 1
        self.send_response(500)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def failing_receiver() -> Iterator[tuple[str, type[Failing]]]:
    handler = type("FailingReceiver", (Failing,), {"hits": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", KINDS)
def test_the_events_page_shows_a_failing_webhook_and_retries_it_now(
    page: Page, portal: Portal, kind: str, failing_receiver: tuple[str, type[Failing]]
):
    url, receiver = failing_receiver
    box = SecretBox("portal-browser-test-secret")
    owner_reseller = None if kind == "operator" else portal.people.reseller_id

    async def arrange(session: AsyncSession) -> tuple[int, int]:
        # An account of its own (one webhook per account), the reseller's client.
        owner = await make_client(session, reseller_id=owner_reseller)
        sid = next_id()
        session.add(
            WebhookSubscription(
                id=sid,
                client_id=owner.id,
                url=url,
                auth_header_name="X-Hook-Auth",
                auth_header_value_encrypted=box.encrypt(HEADER_SECRET),
            )
        )
        # As a receiver answering 500 leaves it after its first try, with a long backoff
        # (ten minutes, not waited for).
        session.add(
            WebhookDeliveryState(
                subscription_id=sid,
                attempts=1,
                next_attempt_at=utcnow() + timedelta(minutes=10),
                last_error=refused_status(500),
            )
        )
        await session.flush()
        caller = Caller(
            user_id=1,
            user_email="actor@example.com",
            superuser=False,
            group_ids=frozenset({1}),
            key_id=1,
            account_id=owner.id,
            account_type="common",
            account_reseller_id=owner.reseller_id,
        )
        await user_actions.record(
            session,
            Actor(caller, "198.51.100.1", "browser", "req"),
            action_type="update",
            api_group="client",
            resources=[Resource("client", str(owner.id), "Browser shop")],
            client_id=owner.id,
            reseller_id=owner.reseller_id,
            action_data={"name": "Browser shop"},
        )
        return sid, owner.id

    sid, owner_id = portal.arrange(arrange)
    try:
        sign_in(page, portal, kind)
        page.open(portal.url(f"/portal/events?client_id={owner_id}"))
        row = f"#webhook-{sid}"
        text = driver_of(page).find_element(By.CSS_SELECTOR, row).text
        assert "Failing, 1 attempt in a row" in text
        assert refused_status(500) in text and "in 10 min" in text
        assert "header X-Hook-Auth: ***" in text and url in text
        assert HEADER_SECRET not in page.text()
        assert page.axe_problems() == []
        if kind == "operator":
            page.evaluate("document.getElementById('h-webhook').scrollIntoView()")
            screenshot(page, "portal-events")
        assert receiver.hits == 0
        page.click(f"{row} form button")  # Retry now
        assert f"The webhook subscription {sid} is tried again now" in page.text()
        # The serve's dispatcher, woken, tries it at once: the receiver answers 500 again.
        until(lambda: receiver.hits >= 1, "the retried delivery")

        def tried_twice() -> bool:
            driver_of(page).refresh()
            cells = driver_of(page).find_elements(By.CSS_SELECTOR, row)
            return bool(cells) and "2 attempts in a row" in cells[0].text

        until(tried_twice, "the page to show the second failure")
        # The user-action feed shows the action of the account.
        page.click('a[href="/portal/events/actions"]')
        assert "Browser shop" in page.text()
        assert page.axe_problems() == []
        assert page.console_problems() == []
    finally:

        async def clean(session: AsyncSession) -> None:
            await session.execute(delete(WebhookSubscription).where(WebhookSubscription.id == sid))

        portal.arrange(clean)
