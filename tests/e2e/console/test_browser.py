"""The console in a real browser: Playwright driving Debian's Chromium, headless, against the real stack.

A user submits jobs and sees them appear and change phase without reloading, opens a waiting job
and reads its blocker; each page is saved as a screenshot (PHALANX_TEST_ARTIFACTS, default
test-artifacts/console) and checked for labels, keyboard focus and the palette's contrast.
Nothing here downloads a browser: without /usr/bin/chromium (scripts/test.sh installs it with
apt-get as root) or the playwright package, these tests are skipped and say why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx import stack as stacks
from tests.e2e.console.helpers import submit

CHROMIUM = Path(os.environ.get("PHALANX_TEST_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("PHALANX_TEST_ARTIFACTS", "test-artifacts")) / "console"
playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

# WCAG 2 AA: normal text needs 4.5:1 against what is behind it.
CONTRAST_SCRIPT = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => { for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor); if (c.length === 3 || c[3] > 0) return c; }
    return [255, 255, 255]; };
  const failures = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const text = el.textContent.trim().slice(0, 30);
    if (ratio < 4.5) failures.push(`${el.tagName}.${el.className} "${text}" ${ratio.toFixed(2)}`);
  }
  return failures;
}"""

UNLABELLED_SCRIPT = """() => [...document.querySelectorAll("input, select, textarea, button")]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label"))
  .filter((el) => !el.textContent.trim())
  .map((el) => el.outerHTML.slice(0, 80))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        # As root Chromium's sandbox cannot start; the pages are our own.
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    yield opened
    context.close()


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def check_accessibility(page: Any) -> None:
    assert page.evaluate(UNLABELLED_SCRIPT) == [], "form controls without a label"
    assert page.evaluate(CONTRAST_SCRIPT) == [], "text below 4.5:1 contrast"
    assert page.locator("main h1").count() == 1
    page.keyboard.press("Tab")  # the first stop is the skip link, then the sections
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/queues"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "keyboard focus is not visible"


def test_a_submitted_job_appears_and_changes_phase_without_reloading(page: Any, stack: stacks.Stack) -> None:
    page.goto(f"{stack.console_url}/jobs")
    page.locator("#live", has_text="live").wait_for()
    page.evaluate("window.notReloaded = true")
    submit(stack, "browser-live", run_seconds=3)
    row = page.locator("#jobs tbody tr", has_text="browser-live")
    row.wait_for()
    playwright_api.expect(row.locator(".phase")).to_have_text("Completed", timeout=90_000)
    assert page.evaluate("window.notReloaded === true"), "the page was reloaded instead of updated"
    check_accessibility(page)
    screenshot(page, "jobs")


def test_a_waiting_job_tells_its_blocker(page: Any, stack: stacks.Stack) -> None:
    page.goto(f"{stack.console_url}/jobs?phase=Pending")
    page.locator("#live", has_text="live").wait_for()
    submit(stack, "browser-waits", cpu="20")
    page.locator("#jobs a", has_text="browser-waits").click()
    page.wait_for_url("**/jobs/default/browser-waits")
    why = page.locator("#why")
    playwright_api.expect(why).to_contain_text("insufficient cpu", timeout=60_000)
    playwright_api.expect(why).to_contain_text("QueueCapabilityExceeded")
    check_accessibility(page)
    screenshot(page, "job-waiting")


@pytest.mark.parametrize("path", ["queues", "nodes"])
def test_overview_pages_are_accessible(page: Any, stack: stacks.Stack, path: str) -> None:
    page.goto(f"{stack.console_url}/{path}")
    page.locator("main h1").wait_for()
    check_accessibility(page)
    screenshot(page, path)
