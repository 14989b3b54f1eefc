"""Headless Chromium driven through Selenium and chromedriver (Debian's `chromium` and
`chromium-driver`), for the portal's browser tests: open a page, fill and submit a
form as a person would, read what it shows, take a screenshot."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1200,800",
]
TIMEOUT = 30.0
AXE = Path(__file__).parent / "vendor" / "axe.min.js"


def chromium_path() -> str | None:
    """Chromium, when its driver is there too (one is no use without the other)."""
    found = shutil.which(CHROMIUM)
    return found if found and shutil.which(CHROMEDRIVER) else None


def gone(element: WebElement) -> bool:
    """Whether ``element`` left the document: Selenium's staleness_of, which also takes
    the error Chromium gives instead of a stale reference while the page is replaced
    ("Node with given id does not belong to the document")."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


class Page:
    """One browser session (its own cookies), as a person uses it."""

    def __init__(self, executable: str, profile: Path) -> None:
        options = webdriver.ChromeOptions()
        options.binary_location = executable
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        # What the page's console logs (a CSP violation, a missing file) is read back.
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = shutil.which(CHROMEDRIVER)
        assert driver is not None
        self._driver = webdriver.Chrome(options=options, service=Service(driver))
        self._driver.set_page_load_timeout(TIMEOUT)

    def _landed(self, old: WebElement) -> None:
        """Waits for the page that replaces the one whose root is ``old``."""
        WebDriverWait(self._driver, TIMEOUT).until(lambda _: gone(old))
        WebDriverWait(self._driver, TIMEOUT).until(
            lambda d: d.execute_script("return document.readyState") == "complete"
        )

    @property
    def driver(self) -> webdriver.Chrome:
        """Selenium's driver, for what the helpers here do not do."""
        return self._driver

    def open(self, url: str) -> None:
        self._driver.get(url)
        self._loaded()

    def _loaded(self) -> None:
        WebDriverWait(self._driver, TIMEOUT).until(
            lambda d: d.execute_script("return document.readyState") == "complete"
        )

    def wait_until(self, expression: str, timeout: float = TIMEOUT) -> Any:
        """Waits until the JavaScript ``expression`` is truthy (an htmx swap done, say);
        its value. A timeout names the expression."""
        return WebDriverWait(self._driver, timeout).until(
            lambda d: d.execute_script(f"return {expression}"),
            message=f"still false after {timeout} s: {expression}",
        )

    def axe_problems(self) -> list[str]:
        """Serious and critical violations axe-core (vendored: tests/portal/vendor/)
        finds on the page, run through the driver: the page's Content-Security-Policy
        allows no script of ours."""
        self._driver.execute_script(AXE.read_text())
        found: list[str] = self._driver.execute_script(
            "return axe.run(document, {resultTypes: ['violations']}).then(r => r.violations"
            ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
            ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')))"
        )
        return found

    def choose_file(self, element_id: str, path: Path) -> None:
        self._driver.find_element(By.ID, element_id).send_keys(str(path))

    def evaluate(self, expression: str) -> Any:
        return self._driver.execute_script(f"return {expression}")

    def fill_and_submit(self, fields: dict[str, str]) -> None:
        """Types the values into the inputs with these ids, then clicks the form's
        button; waits for the page the answer shows. Should the page be replaced while
        typing (a redirect still landing), the fields are found and typed again."""

        def find() -> WebElement:
            for name, value in fields.items():
                field = self._driver.find_element(By.ID, name)
                field.clear()
                field.send_keys(value)
            return self._driver.find_element(By.CSS_SELECTOR, "main form button")

        self._click_on_a_settled_page(find)

    def click(self, selector: str) -> None:
        self._click_on_a_settled_page(lambda: self._driver.find_element(By.CSS_SELECTOR, selector))

    def _click_on_a_settled_page(self, find: Callable[[], WebElement]) -> None:
        """Clicks ``find()`` on the loaded page and waits for the page it leads to.
        Should the page be replaced under it before the click lands (a redirect still
        landing: the element, or the page's root, is gone), all of it once more on the
        new page, at most three tries; a click that raised never reached the page."""
        for attempt in range(3):
            self._loaded()
            try:
                element = find()
                old: WebElement = self._driver.find_element(By.TAG_NAME, "html")
                element.click()
                break
            except (StaleElementReferenceException, NoSuchElementException):
                if attempt == 2:
                    raise
            except WebDriverException as exc:
                if "does not belong to the document" not in str(exc) or attempt == 2:
                    raise
        self._landed(old)

    def text(self) -> str:
        return str(self._driver.find_element(By.TAG_NAME, "body").text)

    def console_problems(self) -> list[str]:
        """What Chromium logged as errors for the page's resources (a CSP violation, a
        missing file); the page's own status (a 401 sign-in page) is not one."""
        here = str(self._driver.current_url)
        own_status = f"{here} - Failed to load resource: the server responded with a status"
        return [
            entry["message"]
            for entry in self._driver.get_log("browser")
            if entry["level"] == "SEVERE" and not entry["message"].startswith(own_status)
        ]

    def forget(self) -> None:
        """A fresh start for the next test: no cookies, no page, no log."""
        self._driver.delete_all_cookies()
        self._driver.get("about:blank")
        self._driver.get_log("browser")  # reading the log empties it

    def forget_cookies(self) -> None:
        self._driver.delete_all_cookies()

    def screenshot(self, path: Path) -> None:
        self._driver.save_screenshot(str(path))

    def close(self) -> None:
        self._driver.quit()
