"""docs/portal.md, "Accessibility", in a real browser: axe-core (vendored by
scripts/vendor-axe) finds no serious or critical violation on any page of the portal, and
signing in and the main navigation work with the keyboard alone.

For each kind of person (an operator, a reseller and, since sellers can sign in, a
seller: the test finds out by trying), the walk signs in and follows the same-origin
/portal/ links breadth-first from the start page (tests/portal/crawl.py: no download, no
signing out, nothing but HTML; one page per route, at most PAGES per kind), then runs axe
on each. The sign-in page and the refusals (a wrong password, the 404 page, a client
user's page, a form without its token) are checked too. axe is injected through
WebDriver's execute_script, which the pages' Content-Security-Policy does not govern
(test_axe_runs_under_the_pages_policy shows it does not let a page's own inline script
run).

With CLOUDADMIN_SCREENSHOTS=1 the reseller's start page is saved to
docs/images/portal-home.png (the README shows it).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client
from cloudadmin.kit.crypto import hash_password
from tests.factories import make_seller
from tests.portal.browser import TIMEOUT, Page, gone
from tests.portal.conftest import Portal, screenshot, sign_in
from tests.portal.crawl import followable, path_of, portal_router_routes, route_of
from tests.portal.people import PASSWORD

pytestmark = pytest.mark.slow

AXE = (Path(__file__).parent / "vendor" / "axe.min.js").read_text()
PAGES = 40
SERIOUS = ("serious", "critical")
# axe's result, cut to what a report needs: each violation's rule, impact, help and the
# first nodes it names.
RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (result) => done(result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
  }))),
  (error) => done([{id: "axe-error", impact: "critical", help: String(error), nodes: []}]),
);
"""


def driver_of(page: Page) -> WebDriver:
    """The page's WebDriver, for what tests/portal/browser.py does not wrap (scripts
    run asynchronously, keys sent to whatever has the focus)."""
    driver: WebDriver = page._driver  # noqa: SLF001
    return driver


def wait_loaded(driver: WebDriver) -> None:
    WebDriverWait(driver, TIMEOUT).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def violations(page: Page) -> list[dict[str, Any]]:
    """axe's serious and critical violations of the page shown now."""
    driver = driver_of(page)
    driver.set_script_timeout(TIMEOUT)
    if not driver.execute_script("return typeof axe === 'object'"):
        driver.execute_script(AXE)
    found = driver.execute_async_script(RUN_AXE)
    return [v for v in found if v["impact"] in SERIOUS]


class Report:
    """Every serious or critical violation, by page."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}
        self.checked: list[str] = []

    def check(self, page: Page, where: str) -> None:
        self.checked.append(where)
        for v in violations(page):
            self.found.setdefault(where, []).append(
                f"{v['impact']} {v['id']}: {v['help']} at {v['nodes']}"
            )


def walk_in_browser(page: Page, portal: Portal, report: Report, who: str) -> list[str]:
    """From the start page, breadth-first over the portal's links, one page per route,
    at most PAGES; axe on each. The paths opened."""
    driver = driver_of(page)
    routes = portal_router_routes()
    queue = deque(["/portal/"])
    seen_routes: set[str] = set()
    queued = {"/portal/"}
    opened = []
    while queue and len(opened) < PAGES:
        path = queue.popleft()
        route = route_of(routes, path)
        key = route.path if route else path.split("?")[0]
        if key in seen_routes:
            continue
        seen_routes.add(key)
        page.open(portal.url(path))
        wait_loaded(driver)
        if driver.execute_script("return document.contentType") != "text/html":
            continue
        here = str(driver.current_url)
        landed = path_of(here)
        if landed.startswith("/portal/sign-in"):
            raise AssertionError(f"{who}: {path} sent the browser to the sign-in page")
        opened.append(path)
        report.check(page, f"{who} {path}")
        hrefs = driver.execute_script(
            "return Array.from(document.querySelectorAll('a[href]'), (a) => a.href)"
        )
        for href in hrefs:
            target = followable(href, here)
            if target is not None and target not in queued:
                queued.add(target)
                queue.append(target)
    return opened


# The forms whose refusal the walk looks at: a change of something, not its end.
ENDING = ("delete", "revoke", "sign-out", "disable", "end-others", "two-factor/off")
# Too long for any field (portal/forms.py, MAX_FIELD_CHARS): every form refuses it.
TOO_LONG = 10_001
FORMS_A_KIND = 8


def refusals_in_browser(page: Page, portal: Portal, report: Report, who: str, paths: list[str]):
    """The pages' forms refused: on each page, each form with a text field (not one that
    deletes or ends something) is sent, without the browser's own checks and without
    htmx (a plain post), with every text field too long; the answer must be the form
    again with its messages in an alert, and axe must find nothing serious there. The
    number of refusals seen."""
    driver = driver_of(page)
    seen: set[str] = set()
    refused = 0
    for path in paths:
        page.open(portal.url(path))
        wait_loaded(driver)
        actions = driver.execute_script(
            """
            const ending = arguments[0];
            return Array.from(document.querySelectorAll("main form[method=post i]"))
              .filter((f) => !ending.some((e) => f.action.includes(e)))
              .filter((f) => f.querySelector(
                "input:not([type]), input[type=text], input[type=email], textarea"))
              .map((f) => f.action);
            """,
            list(ENDING),
        )
        for action in actions:
            if action in seen or refused >= FORMS_A_KIND:
                continue
            seen.add(action)
            page.open(portal.url(path))
            wait_loaded(driver)
            old = driver.find_element(By.TAG_NAME, "html")
            driver.execute_script(
                """
                const form = Array.from(document.querySelectorAll("main form"))
                  .find((f) => f.action === arguments[0]);
                form.querySelectorAll(
                  "input:not([type]), input[type=text], input[type=email], textarea"
                ).forEach((i) => { i.value = "x".repeat(arguments[1]); });
                form.noValidate = true;
                HTMLFormElement.prototype.submit.call(form);
                """,
                action,
                TOO_LONG,
            )
            WebDriverWait(driver, TIMEOUT).until(lambda _, old=old: gone(old))
            wait_loaded(driver)
            where = f"{who} {path_of(action)} refused"
            alert = driver.execute_script(
                "return document.querySelector('[role=alert], [aria-live]') !== null"
            )
            assert alert, f"{where}: no message in an alert: {page.text()[:500]}"
            report.check(page, where)
            # The refusal's own 400 is in the console; nothing else may be.
            own = f"{action} - Failed to load resource: the server responded with a status of 400"
            others = [p for p in page.console_problems() if not p.startswith(own)]
            if others:
                report.found.setdefault(where, []).extend(others)
            refused += 1
    return refused


def arrange_seller(portal: Portal) -> str:
    """A seller of the reseller with a password set (as its invitation's link sets it)."""

    async def make(session: AsyncSession) -> str:
        reseller = await session.get(Client, portal.people.reseller_id)
        assert reseller is not None
        seller = await make_seller(
            session, reseller, activated=True, password_hash=hash_password(PASSWORD)
        )
        return seller.email

    return portal.arrange(make)


@pytest.mark.parametrize("kind", ["operator", "reseller", "seller"])
def test_axe_finds_nothing_serious_on_any_page_a_kind_reaches(
    page: Page, portal: Portal, kind: str
):
    email = arrange_seller(portal) if kind == "seller" else portal.people.emails[kind]
    sign_in(page, portal, email)
    if page.evaluate("location.pathname") == "/portal/sign-in":
        assert kind == "seller", page.text()
        pytest.skip("sellers cannot sign in to the portal yet")
    assert f"({kind})" in page.text()
    if kind == "reseller":
        screenshot(page, "portal-home")
    report = Report()
    opened = walk_in_browser(page, portal, report, kind)
    # The walk reached the sections, not just the start page.
    assert len(opened) >= (2 if kind == "seller" else 5), opened
    if kind != "seller":  # who changes nothing has few forms
        assert refusals_in_browser(page, portal, report, kind, opened) >= 2
    assert report.found == {}, report.found
    assert page.console_problems() == []


def test_axe_finds_nothing_serious_on_sign_in_and_the_refusals(page: Page, portal: Portal):
    report = Report()
    driver = driver_of(page)
    page.open(portal.url("/portal/sign-in"))
    report.check(page, "the sign-in page")
    sign_in(page, portal, "operator", "not the password")
    assert "wrong" in page.text()
    report.check(page, "a wrong password")
    sign_in(page, portal, "operator")
    page.open(portal.url("/portal/no-such-page"))
    assert "Not found" in page.text()
    report.check(page, "the 404 page")
    page.open(portal.url(f"/portal/accounts/{portal.people.other_client_id}0"))
    report.check(page, "an account that does not exist")
    # A form whose token is not the session's: the 403 page.
    page.open(portal.url("/portal/"))
    driver.execute_script(
        "document.querySelector('nav form input[name=csrf_token]').value = 'forged'"
    )
    page.click("nav form button")
    assert "Refused" in page.text()
    report.check(page, "a form without its token")
    page.forget_cookies()
    sign_in(page, portal, "client")
    assert "Not part of the Admin Portal" in page.text()
    report.check(page, "a client user's page")
    assert report.found == {}, report.found


def test_axe_runs_under_the_pages_policy(page: Page, portal: Portal):
    # WebDriver's scripts are not the page's: the Content-Security-Policy, which refuses
    # any inline script of the page, does not stop them (axe is one).
    driver = driver_of(page)
    page.open(portal.url("/portal/sign-in"))
    driver.execute_script(
        "const s = document.createElement('script');"
        "s.textContent = 'window.inlineRan = true;';"
        "document.head.appendChild(s);"
    )
    assert page.evaluate("window.inlineRan === true") is False
    assert any("Content Security Policy" in p for p in page.console_problems())
    assert violations(page) == []
    assert page.evaluate("typeof axe.run") == "function"
    # And axe finds what it should: an unlabelled input is a critical violation.
    driver.execute_script(
        "document.querySelector('main').appendChild(document.createElement('input'))"
    )
    assert "label" in {v["id"] for v in violations(page)}


def test_signing_in_and_the_navigation_work_with_the_keyboard_alone(page: Page, portal: Portal):
    driver = driver_of(page)
    # Each page is freshly loaded: Tab starts at the top of the document.
    page.open(portal.url("/portal/sign-in"))

    def focused() -> Any:
        return driver.switch_to.active_element

    def tab_to(check: str, limit: int = 30, back: bool = False) -> None:
        """Tab (or Shift+Tab) until ``check`` (a script's expression on the focused
        element ``e``) holds; each focused element must show its focus."""
        for _ in range(limit):
            ActionChains(driver).send_keys(Keys.SHIFT + Keys.TAB if back else Keys.TAB).perform()
            element = focused()
            visible = driver.execute_script(
                "const e = arguments[0], s = getComputedStyle(e);"
                "return e.matches(':focus-visible') && "
                "((s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || "
                "s.boxShadow !== 'none');",
                element,
            )
            assert visible, element.get_attribute("outerHTML")
            if driver.execute_script(f"const e = arguments[0]; return {check};", element):
                return
        raise AssertionError(f"Tab never reached {check}")

    email = portal.people.emails["operator"]
    tab_to("e.id === 'email'")
    focused().send_keys(email)
    tab_to("e.id === 'password'")
    focused().send_keys(PASSWORD + Keys.ENTER)
    WebDriverWait(driver, TIMEOUT).until(
        lambda d: d.execute_script("return location.pathname") == "/portal/"
    )
    wait_loaded(driver)
    # Through the main navigation to a section, and Enter opens it.
    tab_to("e.closest('nav[aria-label=Main]') && e.textContent.trim() === 'Accounts'")
    focused().send_keys(Keys.ENTER)
    WebDriverWait(driver, TIMEOUT).until(
        lambda d: d.execute_script("return location.pathname") == "/portal/accounts"
    )
    wait_loaded(driver)
    current = driver.execute_script(
        "return document.querySelector('nav[aria-label=Main] [aria-current=page]')"
        "?.textContent.trim()"
    )
    assert current == "Accounts"
    # Every link of the navigation is reached by Tab, in order, and signing out too.
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('nav[aria-label=Main] a'),"
        " (a) => a.textContent.trim())"
    )
    assert len(links) >= 5, links
    for text in links:
        tab_to(f"e.closest('nav[aria-label=Main]') && e.textContent.trim() === {text!r}")
    tab_to("e.tagName === 'BUTTON' && e.textContent.trim() === 'Sign out'")
    focused().send_keys(Keys.ENTER)
    WebDriverWait(driver, TIMEOUT).until(
        lambda d: d.execute_script("return location.pathname") == "/portal/sign-in"
    )
